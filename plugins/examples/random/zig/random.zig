//! random (Zig): uniform random placement among the feasible nodes, from the
//! host's seeded random numbers (so `simulate --seed` stays reproducible).
//! Each node scores `random % 101`. The twin of ../rust/src/lib.rs.

const ws = @import("wasmsched");

pub const metadata = ws.Metadata{
    .name = "random",
    .version = "0.1.0",
    .points = .{ .score = true },
};

pub fn score(_: ws.Pod, nodes: ws.Nodes, scores: []i64) !void {
    // `randoms()` is `random(i)` for every node, in one host call.
    for (nodes.randoms(), scores) |r, *s| s.* = @intCast(r % 101);
}

comptime {
    ws.plugin(@This());
}
