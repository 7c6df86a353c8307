#version 450
#extension GL_GOOGLE_include_directive : require
// Crowds: samples a baked clip for every (copy, joint) of a crowd into a texel buffer of bones
// that crowd.vert reads. One invocation per bone. A crowd's clips are concatenated into one
// frames buffer; each copy's position (f, a) blends frames f and f + 1 of it with weight a
// (the host keeps f + 1 inside the copy's clip): DQS normalizes the shortest-arc blend of
// the two dual quaternions, LBS blends the 3x4 rows linearly. On a whole frame (a = 0) the
// frame is copied unchanged, so the result equals posing an instance with that frame.
// One variant per bone layout (vkdqs/methods.py: SkinningMethod.crowd_layout), not per method:
//   default           frames and bones are dual quaternions (mat2x4: 2 rgba32f texels);
//   SKIN_BONES_ROWS   frames and bones are the three rows of affine matrices (mat3x4: 3 texels);
//   SKIN_SECOND_BLOCK frames and bones are both (5 texels: the DQ, then the second block's
//                     rows): the DQ blended as for DQS, the rows linearly as for LBS.

#include "include/dqs.glsl"
#include "include/lbs.glsl"

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 0) uniform samplerBuffer frames;  // rgba32f; frame f, joint j is
                                                            // bone f * joint_count + j
layout(std430, set = 0, binding = 1) readonly buffer CopyPositions {
    vec2 positions[];  // per copy: first frame (an index into all frames), weight of the next
};
layout(set = 0, binding = 2, rgba32f) uniform writeonly imageBuffer bones;  // copy c, joint j is
                                                                            // bone c * joint_count + j
#ifdef SKIN_BONES_ROWS
#define BONE mat3x4
BONE frame_bone(uint i) {
    int t = 3 * int(i);
    return mat3x4(texelFetch(frames, t), texelFetch(frames, t + 1), texelFetch(frames, t + 2));
}
void store_bone(uint i, BONE b) {
    int t = 3 * int(i);
    imageStore(bones, t, b[0]);
    imageStore(bones, t + 1, b[1]);
    imageStore(bones, t + 2, b[2]);
}
#elif defined(SKIN_SECOND_BLOCK)
struct BONE {
    mat2x4 dq;
    mat3x4 rows;
};
BONE frame_bone(uint i) {
    int t = 5 * int(i);
    return BONE(mat2x4(texelFetch(frames, t), texelFetch(frames, t + 1)),
                mat3x4(texelFetch(frames, t + 2), texelFetch(frames, t + 3),
                       texelFetch(frames, t + 4)));
}
void store_bone(uint i, BONE b) {
    int t = 5 * int(i);
    imageStore(bones, t, b.dq[0]);
    imageStore(bones, t + 1, b.dq[1]);
    imageStore(bones, t + 2, b.rows[0]);
    imageStore(bones, t + 3, b.rows[1]);
    imageStore(bones, t + 4, b.rows[2]);
}
#else
#define BONE mat2x4
BONE frame_bone(uint i) {
    int t = 2 * int(i);
    return mat2x4(texelFetch(frames, t), texelFetch(frames, t + 1));
}
void store_bone(uint i, BONE b) {
    int t = 2 * int(i);
    imageStore(bones, t, b[0]);
    imageStore(bones, t + 1, b[1]);
}
#endif

layout(push_constant) uniform PushConstants {
    uint copy_count;
    uint joint_count;
    uint frame_count;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.copy_count * pc.joint_count) {
        return;
    }
    uint c = i / pc.joint_count;
    uint j = i - c * pc.joint_count;
    vec2 position = positions[c];
    if (position.x < 0.0) {
        return;  // culled by crowd_cull.comp this frame: not drawn, not sampled
    }
    uint f0 = min(uint(max(position.x, 0.0)), pc.frame_count - 1u);
    uint f1 = min(f0 + 1u, pc.frame_count - 1u);
    float a = clamp(position.y, 0.0, 1.0);
    BONE b0 = frame_bone(f0 * pc.joint_count + j);
    if (a <= 0.0) {
        store_bone(i, b0);
        return;
    }
    BONE b1 = frame_bone(f1 * pc.joint_count + j);
#ifdef SKIN_BONES_ROWS
    store_bone(i, b0 * (1.0 - a) + b1 * a);
#elif defined(SKIN_SECOND_BLOCK)
    mat2x4 d = b0.dq * (1.0 - a) + b1.dq * (a * dq_sign(b0.dq[0], b1.dq[0]));
    store_bone(i, BONE(dq_normalize(d) ? d : b0.dq, b0.rows * (1.0 - a) + b1.rows * a));
#else
    mat2x4 d = b0 * (1.0 - a) + b1 * (a * dq_sign(b0[0], b1[0]));
    store_bone(i, dq_normalize(d) ? d : b0);
#endif
}
