#version 450
// Classic Delta Mush (Mancewicz et al. 2014) on skinned vertices, one vertex per invocation,
// in three passes chosen by the PASS specialization constant (vkdqs/delta_mush_gpu.py records
// them after the skinning dispatch, with a compute -> compute barrier between every two):
//
//   PASS 0, smooth:  q = p + step (mean of the neighbours - p)   (iterations dispatches)
//   PASS 1, rebuild: q = s + t d.x + b d.y + n d.z, the frame (t, b, n) of the smoothed mesh
//   PASS 2, normals: the result's area-weighted vertex normals; writes positions and normals
//
// The skinned positions are read from, and the result written to, the Skinner's r32f output,
// 3 floats a vertex from a push-constant base (it holds P poses' positions, then their normals);
// between passes they ping-pong between two rgba32f scratch buffers, read as uniform texel
// buffers (one fetch a vertex: on lavapipe far faster than three r32f image loads). The frame is built as in the
// float64 reference, vkdqs/delta_mush.py, degenerate cases included. Normals sum each incident
// triangle's (next - p) x (prev - p) through a vertex -> corners list: no atomics. Neighbours
// come 4 a texel and corners 2 a texel, each list padded with the vertex itself, which adds
// nothing (q - p = 0, a zero cross product): one fetch serves 4 neighbours.

layout(local_size_x_id = 1) in;
layout(constant_id = 9) const int PASS = 0;
// read the positions from the Skinner's output (src_out) instead of a scratch buffer (src)
layout(constant_id = 10) const bool FROM_OUT = false;

// per vertex: first neighbour texel, neighbour count, first corner texel, corner count
layout(set = 0, binding = 0) uniform usamplerBuffer topology;   // rgba32ui
layout(set = 0, binding = 1) uniform usamplerBuffer neighbours; // rgba32ui, sorted per vertex
layout(set = 0, binding = 2) uniform usamplerBuffer corners;    // rgba32ui: (next, prev) x 2
layout(set = 0, binding = 3) uniform samplerBuffer deltas;      // rgba32f: offset in (t, b, n)
layout(set = 0, binding = 4, r32f) uniform readonly imageBuffer src_out;
layout(set = 0, binding = 5, r32f) uniform writeonly imageBuffer dst_out;
layout(set = 0, binding = 6) uniform samplerBuffer src;                   // rgba32f scratch
layout(set = 0, binding = 7, rgba32f) uniform writeonly imageBuffer dst;  // rgba32f scratch

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint src_base;     // FROM_OUT: first float of the positions read in src_out
    uint dst_base;     // PASS 2: first float of the positions written to dst_out
    uint normal_base;  // PASS 2: first float of the normals written to dst_out
    float step;        // PASS 0: lambda
} pc;

// vkdqs/delta_mush.py's TANGENT_EPS squared and TINY
const float TANGENT_EPS2 = 1e-10;
const float TINY = 1e-30;

vec3 load(uint v) {
    if (FROM_OUT) {
        int o = int(pc.src_base + 3u * v);
        return vec3(imageLoad(src_out, o).x, imageLoad(src_out, o + 1).x, imageLoad(src_out, o + 2).x);
    }
    return texelFetch(src, int(v)).xyz;
}

void store_out(uint base, uint v, vec3 p) {
    int o = int(base + 3u * v);
    imageStore(dst_out, o, vec4(p.x));
    imageStore(dst_out, o + 1, vec4(p.y));
    imageStore(dst_out, o + 2, vec4(p.z));
}

void store(uint v, vec3 p) {
    imageStore(dst, int(v), vec4(p, 0.0));
}

// The unit area-weighted normal at v (position p); (0, 0, 1) off every triangle of non-zero area.
vec3 area_normal(uint v, vec3 p, uvec4 topo) {
    vec3 acc = vec3(0.0);
    for (uint k = topo.z; k < topo.z + (topo.w + 1u) / 2u; ++k) {
        uvec4 c = texelFetch(corners, int(k));
        acc += cross(load(c.x) - p, load(c.y) - p);
        acc += cross(load(c.z) - p, load(c.w) - p);
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
            store(v, p);
            return;
        }
        vec3 sum = vec3(0.0);  // of q - p
        for (uint k = topo.x; k < topo.x + (topo.y + 3u) / 4u; ++k) {
            uvec4 q = texelFetch(neighbours, int(k));
            sum += (load(q.x) - p) + (load(q.y) - p) + (load(q.z) - p) + (load(q.w) - p);
        }
        store(v, p + pc.step * (sum / float(topo.y)));
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
        store(v, p + d.x * t + d.y * cross(n, t) + d.z * n);
    } else {
        store_out(pc.dst_base, v, p);
        store_out(pc.normal_base, v, area_normal(v, p, topo));
    }
}
