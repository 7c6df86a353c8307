"""Velocity skinning (Rohmer et al. 2021): secondary motion from the bones' velocities."""
