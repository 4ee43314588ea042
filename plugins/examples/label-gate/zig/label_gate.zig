//! label-gate (Zig): a pod that asks for a node class with an annotation (by
//! default `cluster.type: raspberry`) only goes to nodes whose label of the
//! same key has that value. Pods that ask for nothing pass everywhere.
//! The twin of ../rust/src/lib.rs.
//!
//! Args: `{"key": "cluster.type"}`.

const std = @import("std");
const ws = @import("wasmsched");

pub const metadata = ws.Metadata{
    .name = "label-gate",
    .version = "0.1.0",
    .points = .{ .pre_filter = true, .filter = true },
};

var key: []const u8 = "cluster.type";

pub fn configure(args: ws.Args) !void {
    const k = args.string("key") orelse "cluster.type";
    if (k.len == 0) return ws.fail("args.key: must not be empty", .{});
    key = k; // args stay valid while this configuration is current
}

/// Pods that ask for no class skip the filter.
pub fn preFilter(pod: ws.Pod) !ws.Status {
    return .{ .code = if (pod.annotation(key) != null) .success else .skip };
}

pub fn filter(pod: ws.Pod, nodes: ws.Nodes, out: ws.Rejections) !void {
    const want = pod.annotation(key) orelse return;
    const reason = try ws.print("node(s) were not of the requested {s} {s}", .{ key, want });
    // One host call for the label of every node.
    for (nodes.labelValues(key), 0..) |label, i| {
        const have = label.get() orelse "";
        if (!label.is_some or !std.mem.eql(u8, have, want))
            out.reject(@intCast(i), .unschedulable_and_unresolvable, reason);
    }
}

comptime {
    ws.plugin(@This());
}
