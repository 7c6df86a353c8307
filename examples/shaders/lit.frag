#version 450
// The example app's own fragment shader: a key light and an ambient term.
layout(location = 0) in vec3 world_normal;
layout(location = 0) out vec4 color;

void main() {
    vec3 n = normalize(world_normal);
    float key = max(dot(n, normalize(vec3(0.4, 0.8, 0.6))), 0.0);
    color = vec4(vec3(0.15, 0.35, 0.6) * (0.25 + 0.75 * key), 1.0);
}
