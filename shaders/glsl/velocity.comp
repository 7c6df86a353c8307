#version 450
// Velocity skinning (Rohmer et al. 2021) after the skinning: each skinned position moves by the
// floppy and squashy terms of the joints of its influences' chains, from their motion relative
// to their parents (vkdqs/methods/velocity/reference.py is the float64 definition;
// vkdqs/methods/velocity/passes.py records this pass and folds its per-bone data). The
// normals stay the base's.
//
// joints: 6 texels a joint, in a depth-first order (a joint's subtree: from it to its end; the
// influences' joints are in that order too), pose p's from joint_base. The floppy turn, walked
// once for each joint of the union of a vertex's chains: (centre, parent), (unit axis x floppy
// strength x angular speed / rig length, subtree end). The rest is linear in the point and
// folded over the bone's chain on the host: (floppy lag x the bone's floppy weight, that
// weight), then the rows of the chain's squash map x the bone's squashy weight.

layout(local_size_x = 64) in;
// influence texels a vertex: 1 (4 slots) or 2 (8 slots)
layout(constant_id = 15) const uint SLOT_TEXELS = 1u;

layout(set = 0, binding = 0, r32f) uniform imageBuffer vertices;  // the Skinner's output
layout(set = 0, binding = 1) uniform usamplerBuffer influence_joints;  // slots / 4 a vertex
layout(set = 0, binding = 2) uniform samplerBuffer influence_weights;
layout(set = 0, binding = 3) uniform samplerBuffer vertex_weights;  // (floppy, squashy, 0, 0)
layout(set = 0, binding = 4) uniform samplerBuffer joints;

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint positions;   // the pose's first float in vertices
    uint joint_base;  // the pose's first texel in joints
    uint bone_count;  // bounds a chain's walk
    float max_angle;
} pc;

vec4 joint_texel(int j, int k) {
    return texelFetch(joints, int(pc.joint_base) + 6 * j + k);
}

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertex_count) {
        return;
    }
    int at = int(pc.positions + 3u * v);
    vec3 p = vec3(imageLoad(vertices, at).x, imageLoad(vertices, at + 1).x,
                  imageLoad(vertices, at + 2).x);
    vec4 p1 = vec4(p, 1.0);
    vec2 own = texelFetch(vertex_weights, int(v)).xy;
    // the chains' linear parts; each slot's bone, weight x floppy weight and subtree place
    // (-1 for an empty slot: in no joint's range)
    vec3 lag = vec3(0.0), squash = vec3(0.0);
    ivec4 bone[2] = ivec4[2](ivec4(-1), ivec4(-1));  // -1: an empty slot, in no subtree
    vec4 pull[2] = vec4[2](vec4(0.0), vec4(0.0));
    for (uint t = 0u; t < SLOT_TEXELS; ++t) {
        int row = int(SLOT_TEXELS * v + t);
        uvec4 bones = texelFetch(influence_joints, row);
        vec4 weights = texelFetch(influence_weights, row);
        for (int s = 0; s < 4; ++s) {
            float w = weights[s];
            if (w <= 0.0) {
                continue;
            }
            int k = int(bones[s]);
            vec4 linear = joint_texel(k, 2);
            lag += w * linear.xyz;
            squash += w * vec3(dot(joint_texel(k, 3), p1), dot(joint_texel(k, 4), p1),
                               dot(joint_texel(k, 5), p1));
            bone[t][s] = k;
            pull[t][s] = w * linear.w;
        }
    }
    vec4 place[2] = vec4[2](vec4(bone[0]), vec4(bone[1]));
    // the floppy turns: each joint of the chains' union once, weighted by the slots it
    // carries (those in its subtree); a slot's walk stops where an earlier slot's has been
    vec3 turn = vec3(0.0);
    const vec4 lane = vec4(0.0, 1.0, 2.0, 3.0);
    for (uint t = 0u; t < SLOT_TEXELS; ++t) {
        for (int s = 0; s < 4; ++s) {
            int j = bone[t][s];
            vec4 before0 = t == 0u ? step(lane, vec4(float(s) - 0.5)) : vec4(1.0);
            vec4 before1 = t == 0u ? vec4(0.0) : step(lane, vec4(float(s) - 0.5));
            for (uint n = 0u; j >= 0 && n < pc.bone_count; ++n) {
                vec4 axis = joint_texel(j, 1);
                float here = float(j);
                vec4 in0 = step(here, place[0]) * (1.0 - step(axis.w, place[0]));
                vec4 in1 = SLOT_TEXELS > 1u
                    ? step(here, place[1]) * (1.0 - step(axis.w, place[1])) : vec4(0.0);
                if (dot(in0, before0) + dot(in1, before1) > 0.0) {
                    break;
                }
                vec4 centre = joint_texel(j, 0);
                float weight = dot(in0, pull[0]) + dot(in1, pull[1]);
                float rate = length(axis.xyz);
                if (rate > 0.0 && weight > 0.0) {
                    vec3 a = axis.xyz / rate;
                    vec3 x = p - centre.xyz;
                    vec3 r = x - dot(x, a) * a;  // from the axis
                    float angle = min(rate * length(r), pc.max_angle);
                    turn += weight * (r * (cos(angle) - 1.0) - cross(a, r) * sin(angle));
                }
                j = int(centre.w);
            }
        }
    }
    vec3 d = own.x * (lag + turn) + own.y * squash;
    imageStore(vertices, at, vec4(p.x + d.x));
    imageStore(vertices, at + 1, vec4(p.y + d.y));
    imageStore(vertices, at + 2, vec4(p.z + d.z));
}
