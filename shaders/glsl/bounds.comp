#version 450
#extension GL_GOOGLE_include_directive : require
// Skinned bounds after the skinning: the exact axis-aligned box of each pose's positions, which
// skin.comp wrote (floats, xyz of pose p's vertex i at 3 (p n + i)), reduced in dispatches of
// the same submission (Skinner.skin(bounds=True)), so that the skinning dispatch is the very one
// skin() runs: on lavapipe any box code inside it (a loop of several vertices an invocation,
// atomics, even never run, or subgroup operations) cost 1.2-1.9x the skinning.
// The positions are read as rgba32f texels, 4 floats a fetch. An invocation takes groups of 12
// consecutive floats (3 texels, 4 vertices' worth) from the texel holding the pose's first float
// on: each group's first float is component r = -(base mod 4) mod 3 of its vertex, so a group is
// 4 xyz triples in components rotated by r (undone once at the end). The main dispatch
// (BOUNDS_EDGES false) reduces the groups wholly inside the pose's positions, BOUNDS_STEPS an
// invocation (a workgroup's invocations read neighbouring groups at each step), unmasked; the
// edge dispatch (true) the first and last EDGE vertices (a superset of those the partial groups
// at either end hold), one an invocation. On lavapipe a branch's body runs under a mask, so
// masking every float in the main loop cost as much as reading it. Workgroup y is the pose
// (first_pose + y); each invocation folds its box into the pose's record with atomics.

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 0) uniform samplerBuffer positions;  // rgba32f view of the output
layout(set = 0, binding = 1) buffer Boxes {
    uint boxes[];  // pose p's record at 8 p (shader_interface.BOX_STRIDE)
};

#include "include/box.glsl"

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint first_pose;
} pc;

layout(constant_id = 12) const bool BOUNDS_EDGES = false;

// groups of 12 floats an invocation reduces (shader_interface.BOUNDS_STEPS)
const uint BOUNDS_STEPS = 16u;
// vertices at each end of a pose the edge dispatch reduces (shader_interface.BOUNDS_EDGE)
const uint EDGE = 8u;

void main() {
    uint pose = pc.first_pose + gl_WorkGroupID.y;
    uint base = 3u * pc.vertex_count * pose;  // the pose's first float
    uint end = base + 3u * pc.vertex_count;
    vec3 lo = vec3(uintBitsToFloat(0x7f800000u));  // +inf
    vec3 hi = -lo;
    if (BOUNDS_EDGES) {
        uint i = gl_LocalInvocationID.x;
        if (i < 2u * EDGE) {
            uint v = i < EDGE ? i : pc.vertex_count - min(pc.vertex_count, 2u * EDGE - i);
            uint f = base + 3u * min(v, pc.vertex_count - 1u);
            lo = vec3(texelFetch(positions, int(f >> 2u))[f & 3u],
                      texelFetch(positions, int((f + 1u) >> 2u))[(f + 1u) & 3u],
                      texelFetch(positions, int((f + 2u) >> 2u))[(f + 2u) & 3u]);
            hi = lo;
        }
    } else {
        uint start = base & ~3u;  // the first float of the texel holding the pose's first
        // the first whole group: group 0 unless it begins before the pose
        uint first = start + (start < base ? 12u : 0u);
        uint group0 = gl_WorkGroupID.x * gl_WorkGroupSize.x * BOUNDS_STEPS +
                      gl_LocalInvocationID.x;
        for (uint step = 0u; step < BOUNDS_STEPS; ++step) {
            uint f = first + 12u * (group0 + step * gl_WorkGroupSize.x);
            if (f + 12u <= end) {
                int t = int(f >> 2u);
                vec4 a = texelFetch(positions, t);
                vec4 b = texelFetch(positions, t + 1);
                vec4 c = texelFetch(positions, t + 2);
                lo = min(min(lo, a.xyz), min(vec3(a.w, b.xy), min(vec3(b.zw, c.x), c.yzw)));
                hi = max(max(hi, a.xyz), max(vec3(a.w, b.xy), max(vec3(b.zw, c.x), c.yzw)));
            }
        }
        // slot j holds component (r + j) mod 3
        uint r = (3u - (base & 3u) % 3u) % 3u;
        lo = r == 0u ? lo : (r == 1u ? lo.zxy : lo.yzx);
        hi = r == 0u ? hi : (r == 1u ? hi.zxy : hi.yzx);
    }
    if (lo.x <= hi.x) {  // reduced a vertex
        fold_box(8u * pose, lo, hi);
    }
}
