//! {{name}}: rejects nodes that lack a label (args {"label": ...}, default
//! "wasmsched.io/allowed").
const ws = @import("wasmsched");

pub const metadata = ws.Metadata{
    .name = "{{name}}",
    .version = "0.1.0",
    .points = .{ .filter = true },
};

var label: []const u8 = "wasmsched.io/allowed";

pub fn configure(args: ws.Args) !void {
    label = args.string("label") orelse "wasmsched.io/allowed";
}

pub fn filter(_: ws.Pod, nodes: ws.Nodes, out: ws.Rejections) !void {
    for (nodes.labelValues(label), 0..) |v, i| {
        if (!v.is_some) out.reject(@intCast(i), .unschedulable, "node(s) had no required label");
    }
}

comptime {
    ws.plugin(@This());
}
