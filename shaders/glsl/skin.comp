#version 450
#extension GL_GOOGLE_include_directive : require
// Compute skinning for throughput and batches: the same skin_vertex() as skin.vert.
// Vertex data is read through uniform texel buffers and written through a storage texel buffer:
// on lavapipe texel-buffer access is an order of magnitude faster than storage-buffer access.
// Output layout: positions at position_base + OUTPUT_STRIDE*i in out_data, normals at
// normal_base + OUTPUT_STRIDE*i in out_normals (floats; one view bound to both where it holds
// the whole output): 3, two tightly packed (N, 3) arrays the host reads back; 4, an app's vec4
// rows (Skinner.record), whose fourth float is left as it is.
// Chunks: where a device's maxTexelBufferElements is smaller than a mesh's texel buffers (the
// Vulkan minimum is 65536), the Skinner dispatches the mesh in chunks of whole workgroups, each
// with views that start at its first vertex (vertex_first): i is then v - vertex_first, and
// the bases are relative to the chunk's output views (vkdqs/engine/chunks.py). The morph
// deltas are one view of the whole mesh, indexed by v.
// Bounds (COMPUTE_OUTPUT bit 1): the exact axis-aligned box of the skinned positions, reduced in
// the same dispatch. Each invocation skins BOX_STEPS vertices (a workgroup covers LOCAL_SIZE *
// BOX_STEPS consecutive ones, its invocations reading neighbours at each step), keeps their
// min and max in registers, then folds them into the pose's box in a storage buffer (6 uints at
// box_base: min xyz, max xyz, as order-preserving keys, so integer atomicMax is float min/max;
// the host zero-fills the buffer and decodes the keys). No shared memory and no barrier: on
// lavapipe a workgroup barrier cost more than the skinning. COMPUTE_OUTPUT bit 0 writes the
// vertices; without it (Skinner.bounds()) only the box is written, and the normals are not
// computed at all.

#include "include/skin.glsl"
#include "include/morph.glsl"
#include "include/vertex_data.glsl"

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 1) uniform samplerBuffer in_positions;   // rgba32f, xyz used
layout(set = 0, binding = 2) uniform samplerBuffer in_normals;     // mesh_normal() reads it
layout(set = 0, binding = 5, r32f) uniform writeonly imageBuffer out_data;     // positions
layout(set = 0, binding = 15, r32f) uniform writeonly imageBuffer out_normals; // normals
#ifdef SKIN_DDM
// Direct Delta Mush reads its precomputation instead of the joints and weights
#include "include/ddm_inputs.glsl"
#else
layout(set = 0, binding = 3) uniform usamplerBuffer in_joints;     // rgba32ui (lean: 16 or 8 bits)
layout(set = 0, binding = 4) uniform samplerBuffer in_weights;     // rgba32f (lean: unorm16 or 8)
// The lean layout's packed rows (PACKED_ROWS, include/vertex_data.glsl): in_joints (and
// in_joints_1) hold them as rgba32ui; in_normals and in_weights are views of the same buffer,
// bound (the set layout has them) but not read.
#endif
#if defined(SKIN_INFLUENCES_8) && !defined(SKIN_DDM)
layout(set = 0, binding = 7) uniform usamplerBuffer in_joints_1;   // as in_joints, slots 4..7
layout(set = 0, binding = 8) uniform samplerBuffer in_weights_1;   // rgba32f, slots 4..7
#endif
#ifdef SKIN_AUX
layout(set = 0, binding = 9) uniform samplerBuffer in_aux;  // rgba32f: center xyz, DQS blend w
#endif

layout(set = 0, binding = 12) buffer Boxes {
    uint boxes[];
};

#include "include/box.glsl"

// Bit 0: write the skinned vertices; bit 1: reduce their box. A specialization constant, so the
// unused code is compiled away (skin() without bounds costs what it did before bounds existed).
layout(constant_id = 8) const uint COMPUTE_OUTPUT = 1u;
const bool WRITE_VERTICES = (COMPUTE_OUTPUT & 1u) != 0u;
const bool REDUCE_BOX = (COMPUTE_OUTPUT & 2u) != 0u;
// Floats from one output row to the next: 3 (tight rows) or 4 (vec4 rows).
layout(constant_id = 14) const uint OUTPUT_STRIDE = 3u;

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint position_base;
    uint normal_base;
    uint box_base;
    float diag2;  // the rest mesh's bounding-box diagonal, squared (SKIN_DDM's degenerate test)
    uint vertex_first;  // the chunk's first vertex: where its vertex views start
} pc;

// vertices an invocation skins when it reduces a box (shader_interface.BOX_STEPS)
const uint BOX_STEPS = 16u;

// Skin vertex v, write it (WRITE_VERTICES) and return its position.
vec3 skin_one(uint v) {
    int iv = int(v - pc.vertex_first);  // in the chunk's views
    vec3 p = texelFetch(in_positions, iv).xyz;
#ifdef SKIN_DDM
    vec3 n = mesh_normal(texelFetch(in_normals, iv));
    vec3 rest = p;
    morph_vertex(int(v), p, n);
    ddm_skin_input(iv, rest, p - rest, n, pc.diag2, p, n);
#else
    vec3 n;
    ivec4 joints;
    vec4 weights;
#ifdef SKIN_INFLUENCES_8
    ivec4 joints_1;
    vec4 weights_1;
#endif
    if (PACKED_ROWS) {  // the lean layout's one texel: normal, joints and weights in 32-bit words
        uvec4 row = texelFetch(in_joints, iv);
        n = packed_normal(row);
        joints = packed_joints(row.y);
        weights = packed_weights(row.zw);
#ifdef SKIN_INFLUENCES_8
        uvec4 row_1 = texelFetch(in_joints_1, iv);
        joints_1 = packed_joints(row_1.x);
        weights_1 = packed_weights(row_1.yz);
#endif
    } else {
        n = mesh_normal(texelFetch(in_normals, iv));
        joints = ivec4(texelFetch(in_joints, iv));
        weights = texelFetch(in_weights, iv);
#ifdef SKIN_INFLUENCES_8
        joints_1 = ivec4(texelFetch(in_joints_1, iv));
        weights_1 = texelFetch(in_weights_1, iv);
#endif
    }
    morph_vertex(int(v), p, n);
    skin_vertex(joints, weights,
#ifdef SKIN_INFLUENCES_8
                joints_1, weights_1,
#endif
#ifdef SKIN_AUX
                texelFetch(in_aux, iv),
#endif
                p, n, p, n);
#endif
    if (WRITE_VERTICES) {
        int i = int(pc.position_base + OUTPUT_STRIDE * uint(iv));
        int k = int(pc.normal_base + OUTPUT_STRIDE * uint(iv));
        imageStore(out_data, i, vec4(p.x));
        imageStore(out_data, i + 1, vec4(p.y));
        imageStore(out_data, i + 2, vec4(p.z));
        imageStore(out_normals, k, vec4(n.x));
        imageStore(out_normals, k + 1, vec4(n.y));
        imageStore(out_normals, k + 2, vec4(n.z));
    }
    return p;
}

void main() {
    if (!REDUCE_BOX) {
        uint v = gl_GlobalInvocationID.x;
        if (v < pc.vertex_count) {
            skin_one(v);
        }
        return;
    }
    uint first = gl_WorkGroupID.x * gl_WorkGroupSize.x * BOX_STEPS + gl_LocalInvocationID.x;
    vec3 lo = vec3(uintBitsToFloat(0x7f800000u));  // +inf
    vec3 hi = -lo;
    for (uint step = 0u; step < BOX_STEPS; ++step) {
        uint v = first + step * gl_WorkGroupSize.x;
        if (v < pc.vertex_count) {
            vec3 p = skin_one(v);
            lo = min(lo, p);
            hi = max(hi, p);
        }
    }
    if (lo.x <= hi.x) {  // skinned a vertex
        fold_box(pc.box_base, lo, hi);
    }
}
