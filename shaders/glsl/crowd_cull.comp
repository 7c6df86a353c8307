#version 450
// Crowds: frustum culling on the GPU. One invocation per copy tests the copy's box (its clip's
// box over the clip's frames, moved by the copy's model matrix) against the view volume and,
// when any part of it may be in view, appends the copy's index to the visible list and counts it
// in every material group's indirect draw command (vkCmdDrawIndexedIndirect reads the counts;
// crowd.vert draws copy visible[gl_InstanceIndex]). The host zeroes the counts each frame.
// A culled copy's frame position gets x = -1, so that crowd.comp, which runs after this pass,
// does not sample its bones. With cull 0 (culling off) every copy is appended.

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 0) uniform samplerBuffer copies;  // rgba32f, 8 texels per copy:
// model (4 columns), normal matrix (3 columns; column 0's w: the copy's clip), colour
layout(set = 0, binding = 1) uniform samplerBuffer clip_boxes;  // rgba32f, per clip: lo, hi
layout(set = 0, binding = 2, r32ui) uniform writeonly uimageBuffer visible;
// per material group one VkDrawIndexedIndirectCommand: indexCount, instanceCount, firstIndex,
// vertexOffset, firstInstance (5 uints)
layout(std430, set = 0, binding = 3) buffer Commands {
    uint commands[];
};
// per copy: the first frame to blend and the next one's weight (crowd.comp's positions)
layout(std430, set = 0, binding = 4) buffer CopyPositions {
    vec2 positions[];
};

layout(push_constant) uniform PushConstants {
    mat4 view_projection;
    uint copy_count;
    uint group_count;
    uint cull;
} pc;

bool outside(vec3 lo, vec3 hi) {
    // outside when all 8 corners lie outside one plane of the clip volume
    bvec3 all_low = bvec3(true);   // x < -w, y < -w, z < 0
    bvec3 all_high = bvec3(true);  // x > w, y > w, z > w
    for (int k = 0; k < 8; ++k) {
        vec3 corner = vec3((k & 1) != 0 ? hi.x : lo.x, (k & 2) != 0 ? hi.y : lo.y,
                           (k & 4) != 0 ? hi.z : lo.z);
        vec4 c = pc.view_projection * vec4(corner, 1.0);
        all_low = bvec3(all_low.x && c.x < -c.w, all_low.y && c.y < -c.w, all_low.z && c.z < 0.0);
        all_high = bvec3(all_high.x && c.x > c.w, all_high.y && c.y > c.w,
                         all_high.z && c.z > c.w);
    }
    return any(all_low) || any(all_high);
}

void main() {
    uint copy = gl_GlobalInvocationID.x;
    if (copy >= pc.copy_count) {
        return;
    }
    int t = 8 * int(copy);
    if (pc.cull != 0u) {
        mat4 model = mat4(texelFetch(copies, t), texelFetch(copies, t + 1),
                          texelFetch(copies, t + 2), texelFetch(copies, t + 3));
        int clip = int(texelFetch(copies, t + 4).w);
        vec3 lo = texelFetch(clip_boxes, 2 * clip).xyz;
        vec3 hi = texelFetch(clip_boxes, 2 * clip + 1).xyz;
        // the box around the moved box (Arvo 1990)
        vec3 center = (model * vec4(0.5 * (lo + hi), 1.0)).xyz;
        vec3 half_size = mat3(abs(model[0].xyz), abs(model[1].xyz), abs(model[2].xyz)) *
                         (0.5 * (hi - lo));
        if (outside(center - half_size, center + half_size)) {
            positions[copy].x = -1.0;  // crowd.comp skips its bones
            return;
        }
    }
    uint slot = atomicAdd(commands[1], 1u);
    for (uint g = 1u; g < pc.group_count; ++g) {
        atomicAdd(commands[5u * g + 1u], 1u);
    }
    imageStore(visible, int(slot), uvec4(copy));
}
