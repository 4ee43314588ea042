//! {{name}}: binds the pods of a group together (args {"label": ...}, default
//! "wasmsched.io/group"; {"minCount": ...}, default 2): Permit holds each pod
//! with the label until minCount pods of its group are reserved, for at most
//! waitSeconds (args, default 30), then releases them all. (The count keeps
//! bound pods; a real plugin would also forget deleted ones, or count the
//! placed pods with nodes.domains at Permit.)
const std = @import("std");
const ws = @import("wasmsched");

pub const metadata = ws.Metadata{
    .name = "{{name}}",
    .version = "0.1.0",
    .points = .{ .reserve = true, .permit = true },
};

var label: []const u8 = "wasmsched.io/group";
var min_count: i64 = 2;
var wait_seconds: i64 = 30;

pub fn configure(args: ws.Args) !void {
    label = args.string("label") orelse "wasmsched.io/group";
    min_count = args.int("minCount") orelse 2;
    wait_seconds = args.int("waitSeconds") orelse 30;
}

/// Instances are pooled: what outlives a call goes to the host's store
/// (`ws.state`), shared by every instance of the plugin. The key of the
/// pod's group there; null when the pod has no group.
fn groupKey(pod: ws.Pod) !?[]const u8 {
    const group = pod.label(label) orelse return null;
    return try ws.print("reserved/{s}/{s}", .{ pod.namespace(), group });
}

pub fn reserve(pod: ws.Pod, _: ws.Nodes) !ws.Status {
    const key = try groupKey(pod) orelse return .{};
    _ = try ws.state.add(key, 1); // in one step, whatever other instances do meanwhile
    return .{};
}

/// Permit rejected the pod, it timed out, or its binding failed.
pub fn unreserve(pod: ws.Pod, _: []const u8) void {
    const key = (groupKey(pod) catch return) orelse return;
    _ = ws.state.add(key, -1) catch {};
}

pub fn permit(pod: ws.Pod, _: ws.Nodes) !ws.Permit {
    const key = try groupKey(pod) orelse return .allow;
    if ((ws.state.getI64(key) orelse 0) < min_count) {
        // Until allowed below, or rejected at the deadline.
        return .{ .wait = @intCast(std.math.clamp(wait_seconds * 1000, 0, std.math.maxInt(u32))) };
    }
    const group = pod.label(label).?;
    for (ws.waiting.pods()) |w| { // release the group's pods held so far
        const g = w.label(label) orelse continue;
        if (std.mem.eql(u8, w.namespace(), pod.namespace()) and std.mem.eql(u8, g, group)) _ = ws.waiting.allow(w.uid());
    }
    return .allow;
}

comptime {
    ws.plugin(@This());
}
