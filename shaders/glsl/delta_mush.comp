#version 450
// Classic Delta Mush (Mancewicz et al. 2014) on skinned vertices, one vertex per invocation,
// in three passes chosen by the PASS specialization constant (vkdqs/delta_mush_gpu.py records
// them after the skinning dispatch, with a compute -> compute barrier before each):
//
//   PASS 0, smooth:  q = p + step (mean of the neighbours - p)   (iterations dispatches)
//   PASS 1, rebuild: q = s + t d.x + b d.y + n d.z, the frame (t, b, n) of the smoothed mesh
//   PASS 2, normals: the result's area-weighted vertex normals; writes positions and normals
//
// The skinned positions are read from, and the result written to, the Skinner's r32f output,
// 3 floats a vertex from a push-constant base (it holds P poses' positions, then their
// normals); between passes they ping-pong between two rgba32f scratch buffers read as uniform
// texel buffers (one fetch a vertex). The frame is built as in the float64 reference,
// vkdqs/delta_mush.py, degenerate cases included.
//
// Neighbours: two texels a vertex at 2 v, seven neighbours padded with v itself (which adds
// nothing: q - p = 0, a zero cross product) and a meta word: the degree, and bit 31 when v is
// the centre of one closed fan; a vertex of more than seven neighbours has the rest in
// overflow texels (4 a texel) from topology.x. No per-vertex offset is fetched on the hot path:
// a pass runs every vertex on its first seven neighbours, then (after a barrier) an OVERFLOW
// dispatch runs again, in full, the vertices of more, listed 4 a texel from pc.list_first (on
// lavapipe a branch no invocation takes still costs: the overflow code in the main dispatch
// took a quarter of a smoothing step, and 7.5x LBS instead of 5.5x on a mesh of 100k).
// The first neighbour is the frame neighbour. Normals sum each incident triangle's
// (next - p) x (prev - p), without atomics: a fan's neighbours are in fan order, its triangles
// (v, ring[i], ring[i + 1]), so its normal comes from the neighbours it loads anyway; the other
// vertices read their corners (topology.zw: first corner texel, count; 2 a texel).
// Seams: the neighbours, the frame neighbour, the fans and the corners are those of the welded
// mesh (vertices at the same position are one node, vkdqs.delta_mush.delta_mush_bind), so a
// seam's copies get the same smoothed positions and frames; PASS 2's normals are each vertex's
// own triangles' (out_corners), the frame normal's where the vertex is alone at its position.

layout(local_size_x_id = 1) in;
layout(constant_id = 9) const int PASS = 0;
// read the positions from the Skinner's output (src_out) instead of a scratch buffer (src)
layout(constant_id = 10) const bool FROM_OUT = false;
// this dispatch runs the listed vertices of more than FIXED neighbours, with the overflow code
layout(constant_id = 11) const bool OVERFLOW = false;

// per vertex: first overflow neighbour texel, degree, first corner texel, corner count
layout(set = 0, binding = 0) uniform usamplerBuffer topology;   // rgba32ui
layout(set = 0, binding = 1) uniform usamplerBuffer neighbours; // rgba32ui, see above
layout(set = 0, binding = 2) uniform usamplerBuffer corners;    // rgba32ui: (next, prev) x 2
layout(set = 0, binding = 3) uniform samplerBuffer deltas;      // rgba32f: offset in (t, b, n)
layout(set = 0, binding = 4, r32f) uniform readonly imageBuffer src_out;
layout(set = 0, binding = 5, r32f) uniform writeonly imageBuffer dst_out;
layout(set = 0, binding = 6) uniform samplerBuffer src;                   // rgba32f scratch
layout(set = 0, binding = 7, rgba32f) uniform writeonly imageBuffer dst;  // rgba32f scratch
// the normals pass's own triangles: per vertex (first corner texel, count | SAME), then corners
layout(set = 0, binding = 8) uniform usamplerBuffer out_corners; // rgba32ui

layout(push_constant) uniform PushConstants {
    uint vertex_count;  // the vertices of this dispatch (OVERFLOW: listed)
    uint src_base;     // FROM_OUT: first float of the positions read in src_out
    uint dst_base;     // PASS 2: first float of the positions written to dst_out
    uint normal_base;  // PASS 2: first float of the normals written to dst_out
    float step;        // PASS 0: lambda
    uint list_first;   // OVERFLOW: the first texel of the vertex list in neighbours
} pc;

const uint FAN = 0x80000000u;  // meta bit: v is the centre of one closed fan
const uint FIXED = 7u;         // neighbours in the two fixed texels
const uint SAME = 0x80000000u; // out_corners count bit: the output normal is the frame normal
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

// The sum of q - p over v's neighbours q.
vec3 neighbour_sum(uint v, vec3 p, uvec4 a, uvec4 b, uint degree) {
    vec3 sum = ((load(a.x) - p) + (load(a.y) - p)) + ((load(a.z) - p) + (load(a.w) - p))
             + ((load(b.x) - p) + (load(b.y) - p)) + (load(b.z) - p);
    if (OVERFLOW && degree > FIXED) {
        uint first = texelFetch(topology, int(v)).x;
        for (uint k = first; k < first + (degree - FIXED + 3u) / 4u; ++k) {
            uvec4 q = texelFetch(neighbours, int(k));
            sum += ((load(q.x) - p) + (load(q.y) - p)) + ((load(q.z) - p) + (load(q.w) - p));
        }
    }
    return sum;
}

// The unit area-weighted normal at v (position p); (0, 0, 1) off every triangle of non-zero area.
vec3 area_normal(uint v, vec3 p, uvec4 a, uvec4 b) {
    uint degree = b.w & ~FAN;
    if (degree == 0u) {
        return vec3(0.0, 0.0, 1.0);
    }
    vec3 acc = vec3(0.0);
    bool fan = (b.w & FAN) != 0u;
    uvec4 topo = !fan || (OVERFLOW && degree > FIXED) ? texelFetch(topology, int(v)) : uvec4(0u);
    if (fan) {  // sum (ring[i] - p) x (ring[i + 1] - p), cyclically
        uint ring[FIXED] = uint[FIXED](a.x, a.y, a.z, a.w, b.x, b.y, b.z);
        vec3 first = load(a.x) - p;
        vec3 prev = first;
        for (uint i = 1u; i < FIXED; ++i) {
            vec3 cur = load(ring[i]) - p;
            acc += cross(prev, cur);
            prev = ring[i] == v ? prev : cur;  // the padding adds nothing
        }
        for (uint k = topo.x; OVERFLOW && degree > FIXED && k < topo.x + (degree - FIXED + 3u) / 4u; ++k) {
            uvec4 q = texelFetch(neighbours, int(k));
            for (int c = 0; c < 4; ++c) {
                vec3 cur = load(q[c]) - p;
                acc += cross(prev, cur);
                prev = q[c] == v ? prev : cur;
            }
        }
        acc += cross(prev, first);
    }
    for (uint k = topo.z; k < topo.z + (topo.w + 1u) / 2u; ++k) {
        uvec4 c = texelFetch(corners, int(k));
        acc += cross(load(c.x) - p, load(c.y) - p);
        acc += cross(load(c.z) - p, load(c.w) - p);
    }
    float len = length(acc);
    return len > 1e-12 ? acc / len : vec3(0.0, 0.0, 1.0);
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.vertex_count) {
        return;
    }
    uint v = OVERFLOW ? texelFetch(neighbours, int(pc.list_first + i / 4u))[i % 4u] : i;
    uvec4 a = texelFetch(neighbours, int(2u * v));
    uvec4 b = texelFetch(neighbours, int(2u * v + 1u));
    uint degree = b.w & ~FAN;
    vec3 p = load(v);
    if (PASS == 0) {
        vec3 sum = neighbour_sum(v, p, a, b, degree);
        store(v, p + pc.step * (sum / float(max(degree, 1u))));
    } else if (PASS == 1) {
        vec3 n = area_normal(v, p, a, b);
        vec3 e = load(a.x) - p;  // the frame neighbour (v itself when it has none)
        vec3 t = e - dot(e, n) * n;
        float t2 = dot(t, t);
        if (t2 <= TANGENT_EPS2 * dot(e, e) || t2 <= TINY) {
            // the coordinate axis least along n (the first of equals), projected
            vec3 m = abs(n);
            vec3 axis = m.x <= m.y && m.x <= m.z ? vec3(1.0, 0.0, 0.0)
                      : m.y <= m.z                ? vec3(0.0, 1.0, 0.0)
                                                  : vec3(0.0, 0.0, 1.0);
            t = axis - dot(axis, n) * n;
        }
        t = normalize(t);
        vec3 d = texelFetch(deltas, int(v)).xyz;
        store(v, p + d.x * t + d.y * cross(n, t) + d.z * n);
    } else {
        store_out(pc.dst_base, v, p);
        uvec4 own = texelFetch(out_corners, int(v));
        vec3 nrm;
        if ((own.y & SAME) != 0u) {
            nrm = area_normal(v, p, a, b);
        } else {  // a seam's copy: its own triangles (the frame's are the welded node's)
            vec3 acc = vec3(0.0);
            for (uint k = own.x; k < own.x + (own.y + 1u) / 2u; ++k) {
                uvec4 c = texelFetch(out_corners, int(k));
                acc += cross(load(c.x) - p, load(c.y) - p);
                acc += cross(load(c.z) - p, load(c.w) - p);
            }
            float len = length(acc);
            nrm = len > 1e-12 ? acc / len : vec3(0.0, 0.0, 1.0);
        }
        store_out(pc.normal_base, v, nrm);
    }
}
