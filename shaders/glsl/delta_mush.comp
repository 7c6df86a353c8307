#version 450
// Classic Delta Mush (Mancewicz et al. 2014) on skinned vertices, one vertex per invocation,
// in three passes chosen by the PASS specialization constant (vkdqs/delta_mush_gpu.py records
// them after the skinning dispatch, with a compute -> compute barrier between every two):
//
//   PASS 0, smooth:  q = p + step (mean of the neighbours - p)   (iterations dispatches)
//   PASS 1, rebuild: q = s + t d.x + b d.y + n d.z, the frame (t, b, n) of the smoothed mesh
//   PASS 2, normals: the result's area-weighted vertex normals; writes positions and normals
//
// Positions are r32f storage texel buffers, 3 floats a vertex from a push-constant base (the
// Skinner's output holds P poses' positions, then their normals). The frame is built as in the
// float64 reference, vkdqs/delta_mush.py, degenerate cases included. Normals sum each incident
// triangle's (next - p) x (prev - p) through a vertex -> corners list: no atomics.

layout(local_size_x_id = 1) in;
layout(constant_id = 9) const int PASS = 0;

// per vertex: first neighbour, neighbour count, first corner, corner count
layout(set = 0, binding = 0) uniform usamplerBuffer topology;   // rgba32ui
layout(set = 0, binding = 1) uniform usamplerBuffer neighbours; // r32ui, sorted per vertex
layout(set = 0, binding = 2) uniform usamplerBuffer corners;    // rg32ui: next, prev vertex
layout(set = 0, binding = 3) uniform samplerBuffer deltas;      // rgba32f: offset in (t, b, n)
layout(set = 0, binding = 4, r32f) uniform readonly imageBuffer src;
layout(set = 0, binding = 5, r32f) uniform writeonly imageBuffer dst;

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint src_base;     // first float of the positions read
    uint dst_base;     // first float of the positions written
    uint normal_base;  // PASS 2: first float of the normals written
    float step;        // PASS 0: lambda
} pc;

// vkdqs/delta_mush.py's TANGENT_EPS squared and TINY
const float TANGENT_EPS2 = 1e-10;
const float TINY = 1e-30;

vec3 load(uint v) {
    int o = int(pc.src_base + 3u * v);
    return vec3(imageLoad(src, o).x, imageLoad(src, o + 1).x, imageLoad(src, o + 2).x);
}

void store(uint base, uint v, vec3 p) {
    int o = int(base + 3u * v);
    imageStore(dst, o, vec4(p.x));
    imageStore(dst, o + 1, vec4(p.y));
    imageStore(dst, o + 2, vec4(p.z));
}

// The unit area-weighted normal at v (position p); (0, 0, 1) off every triangle of non-zero area.
vec3 area_normal(uint v, vec3 p, uvec4 topo) {
    vec3 acc = vec3(0.0);
    for (uint k = topo.z; k < topo.z + topo.w; ++k) {
        uvec2 c = texelFetch(corners, int(k)).xy;
        acc += cross(load(c.x) - p, load(c.y) - p);
    }
    float len = length(acc);
    return len > 1e-12 ? acc / len : vec3(0.0, 0.0, 1.0);
}

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertex_count) {
        return;
    }
    uvec4 topo = texelFetch(topology, int(v));
    vec3 p = load(v);
    if (PASS == 0) {
        if (topo.y == 0u) {
            store(pc.dst_base, v, p);
            return;
        }
        vec3 sum = vec3(0.0);
        for (uint k = topo.x; k < topo.x + topo.y; ++k) {
            sum += load(texelFetch(neighbours, int(k)).x);
        }
        store(pc.dst_base, v, p + pc.step * (sum / float(topo.y) - p));
    } else if (PASS == 1) {
        vec3 n = area_normal(v, p, topo);
        uint j = topo.y > 0u ? texelFetch(neighbours, int(topo.x)).x : v;
        vec3 e = load(j) - p;
        vec3 t = e - dot(e, n) * n;
        float t2 = dot(t, t);
        if (t2 <= TANGENT_EPS2 * dot(e, e) || t2 <= TINY) {
            // the coordinate axis least along n (the first of equals), projected
            vec3 a = abs(n);
            vec3 axis = a.x <= a.y && a.x <= a.z ? vec3(1.0, 0.0, 0.0)
                      : a.y <= a.z                ? vec3(0.0, 1.0, 0.0)
                                                  : vec3(0.0, 0.0, 1.0);
            t = axis - dot(axis, n) * n;
        }
        t = normalize(t);
        vec3 d = texelFetch(deltas, int(v)).xyz;
        store(pc.dst_base, v, p + d.x * t + d.y * cross(n, t) + d.z * n);
    } else {
        store(pc.dst_base, v, p);
        store(pc.normal_base, v, area_normal(v, p, topo));
    }
}
