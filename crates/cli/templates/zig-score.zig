//! {{name}}: scores each node by a numeric label (args {"label": ...},
//! default "score"), clamped to 0..100; nodes without it score 0.
const ws = @import("wasmsched");

pub const metadata = ws.Metadata{
    .name = "{{name}}",
    .version = "0.1.0",
    .points = .{ .score = true },
};

var label: []const u8 = "score";

pub fn configure(args: ws.Args) !void {
    label = args.string("label") orelse "score";
}

pub fn score(_: ws.Pod, nodes: ws.Nodes, scores: []i64) !void {
    for (nodes.labelNumbers(label), scores) |v, *s| {
        const x = v.get() orelse 0.0;
        s.* = if (x < 0.0) 0 else if (x > 100.0) 100 else @intFromFloat(x);
    }
}

comptime {
    ws.plugin(@This());
}
