#version 450
// Velocity skinning (Rohmer et al. 2021) after the skinning: each skinned position moves by the
// floppy and squashy terms of the joints of its influences' chains, from their motion relative
// to their parents (vkdqs/methods/velocity/reference.py is the float64 definition this follows
// line for line; vkdqs/methods/velocity/passes.py records it). The normals stay the base's.
//
// joints: 4 texels a joint, pose p's from joint_base: (centre, parent), (linear velocity,
// floppy strength times the bone's floppy weight), (angular velocity, squashy strength times
// the bone's squashy weight), (centre of mass, 1 / the rig's length: speeds count in
// lengths a second). The strengths of the joint a vertex's influence names apply to its whole
// chain.

layout(local_size_x = 64) in;

layout(set = 0, binding = 0, r32f) uniform imageBuffer vertices;  // the Skinner's output
layout(set = 0, binding = 1) uniform usamplerBuffer influence_joints;  // slots / 4 a vertex
layout(set = 0, binding = 2) uniform samplerBuffer influence_weights;
layout(set = 0, binding = 3) uniform samplerBuffer vertex_weights;  // (floppy, squashy, 0, 0)
layout(set = 0, binding = 4) uniform samplerBuffer joints;

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint positions;   // the pose's first float in vertices
    uint joint_base;  // the pose's first texel in joints
    uint slot_texels; // influence texels a vertex: 1 (4 slots) or 2 (8 slots)
    uint bone_count;  // bounds a chain's walk
    float max_angle;
} pc;

vec4 joint_texel(int j, int k) {
    return texelFetch(joints, int(pc.joint_base) + 4 * j + k);
}

vec3 rotate(vec3 axis, float angle, vec3 u) {
    float c = cos(angle), s = sin(angle);
    return u * c + cross(axis, u) * s + axis * dot(axis, u) * (1.0 - c);
}

// d_j(p): joint j's floppy and squashy terms at p, strengths f and q
vec3 joint_term(int j, vec3 p, float f, float q) {
    vec3 c = joint_texel(j, 0).xyz;
    vec3 v = joint_texel(j, 1).xyz;
    vec3 w = joint_texel(j, 2).xyz;
    vec4 mass = joint_texel(j, 3);
    vec3 m = mass.xyz;
    float per_length = mass.w;
    vec3 d = -f * v;
    float speed = length(v);
    if (speed > 0.0) {
        vec3 u = v / speed;
        float s = q * speed * per_length;
        vec3 r = p - m;
        float along = dot(r, u);
        d += s * along * u + (inversesqrt(1.0 + s) - 1.0) * (r - along * u);
    }
    float rate = length(w);
    if (rate > 0.0) {
        vec3 a = w / rate;
        vec3 x = p - c;
        vec3 foot = c + dot(x, a) * a;
        float angle = min(f * length(cross(w, x)) * per_length, pc.max_angle);
        d += rotate(a, -angle, p - foot) - (p - foot);
        vec3 medial = m - c;
        float len = length(medial);
        if (len > 0.0) {
            vec3 am = medial / len;
            vec3 e = cross(am, a);
            float en = length(e);
            if (en > 1e-6) {
                e /= en;
                vec3 k = cross(am, e);
                float s = q * length(cross(w, medial)) * per_length;
                vec3 y = x - dot(x, am) * am;
                d += s * dot(y, e) * e + (1.0 / (1.0 + s) - 1.0) * dot(y, k) * k;
            }
        }
    }
    return d;
}

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertex_count) {
        return;
    }
    int at = int(pc.positions + 3u * v);
    vec3 p = vec3(imageLoad(vertices, at).x, imageLoad(vertices, at + 1).x,
                  imageLoad(vertices, at + 2).x);
    vec2 own = texelFetch(vertex_weights, int(v)).xy;
    vec3 d = vec3(0.0);
    for (uint t = 0u; t < pc.slot_texels; ++t) {
        int row = int(pc.slot_texels * v + t);
        uvec4 bones = texelFetch(influence_joints, row);
        vec4 weights = texelFetch(influence_weights, row);
        for (int s = 0; s < 4; ++s) {
            if (weights[s] <= 0.0) {
                continue;
            }
            int bone = int(bones[s]);
            float f = joint_texel(bone, 1).w * own.x;
            float q = joint_texel(bone, 2).w * own.y;
            int j = bone;
            for (uint step = 0u; j >= 0 && step < pc.bone_count; ++step) {
                d += weights[s] * joint_term(j, p, f, q);
                j = int(joint_texel(j, 0).w);
            }
        }
    }
    imageStore(vertices, at, vec4(p.x + d.x));
    imageStore(vertices, at + 1, vec4(p.y + d.y));
    imageStore(vertices, at + 2, vec4(p.z + d.z));
}
