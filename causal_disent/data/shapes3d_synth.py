r"""Procedural Shapes3D-like scenes rendered on the fly, with no download.

Shapes3D (Burgess & Kim, 2018) shows one object standing in a square room; six
factors vary independently over a full grid of 480 000 images of 64x64x3. This
module reproduces that grid procedurally with the same factor names, sizes,
stored values and flat-index order (row-major over the factor sizes, orientation
fastest), so code written for the official file works on it unchanged.

The geometry of an image depends only on (scale, shape, orientation), 480
combinations. Each is ray cast once into a *template*: a region label per pixel
(floor / wall / object) and a shading factor per pixel. Rendering is then a
gather: colour = hsv(hue of the pixel's region, s=1, v=1) x shading, rounded to
uint8. Shading is stored already quantised to multiples of 1/255, so that the
brightest channel of every pixel equals round(255 * shading) whatever the hues;
this is what makes distinct geometries provably give distinct images.

Make a contact sheet (one row per factor):
  python -m causal_disent.data.show shapes3d_synth --out=docs/sheet.png
"""

from __future__ import annotations

import threading

import numpy as np

from causal_disent.data.base import FactorDataset

FACTOR_NAMES = ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")
FACTOR_SIZES = (10, 10, 10, 8, 4, 15)
SHAPE_NAMES = ("cube", "cylinder", "sphere", "capsule")

REGION_FLOOR, REGION_WALL, REGION_OBJECT = 0, 1, 2
REGION_NAMES = ("floor", "wall", "object")

_IMAGE_SIZE = 64
_NUM_PIXELS = _IMAGE_SIZE * _IMAGE_SIZE
# The last three factors fix the geometry; the first three only recolour it.
_NUM_HUE_FACTORS = 3
_NUM_GEOMETRIES = int(np.prod(FACTOR_SIZES[_NUM_HUE_FACTORS:]))  # 480
_NUM_SHADE_LEVELS = 256
# A pixel code names its region and its shade level at once.
_NUM_CODES = len(REGION_NAMES) * _NUM_SHADE_LEVELS
_RENDER_CHUNK = 64  # images per gather

# --- Scene (world units; y is up, the object stands on the floor at the origin).
# The room is a square turned 45 degrees so that at orientation 0 the camera
# looks straight into its far corner, a little behind the object. The camera
# orbits the object, so turning it slides that corner sideways while keeping it
# in view. The corner is kept close so the floor fills only the lower part of
# the image even though the camera looks down enough to show tops of objects.
_CORNER_DISTANCE = 5.0
_ROOM_HALF_WIDTH = 12.0
_CAMERA_DISTANCE = 7.0
_CAMERA_HEIGHT = 2.8
_CAMERA_TARGET_HEIGHT = 1.5
_HALF_FIELD_OF_VIEW_DEG = 20.0
# Unit-scale object size: half-width of the cube, radius of cylinder and sphere.
_OBJECT_RADIUS = 0.8
_CAPSULE_RADIUS = 0.58
_CAPSULE_HEIGHT = 2.5  # total, caps included

# --- Lighting. A single key light above, left of and in front of the camera
# lights the two walls differently and brightens the tops of objects.
_LIGHT_TOWARDS = np.array([0.45, 1.2, -0.8])
_AMBIENT = 0.36
# Soft shadows: the light is sampled on a small cone (fixed directions, so the
# result stays a pure function of the factors).
_SHADOW_CONE_RADIUS = 0.12
_SHADOW_RING_SAMPLES = 8
_SHADOW_STRENGTH = 0.6
# Far surfaces are darkened a little to give a sense of depth.
_DEPTH_DARKENING = 0.15
_DEPTH_NEAR, _DEPTH_FAR = 5.0, 15.0
# Shading never goes below this, so every hue stays identifiable (see tests).
_MIN_SHADE_LEVEL = 64

_EPS = 1e-6


# --------------------------------------------------------------------------- #
# Colours
# --------------------------------------------------------------------------- #
def hue_to_rgb(hue: np.ndarray) -> np.ndarray:
    """Fully saturated, full-value HSV colour of each hue.

    Args:
      hue: [...] floats in [0, 1).
    Returns:
      [..., 3] float32 RGB in [0, 1]; the largest channel is exactly 1.
    """
    hue = np.asarray(hue, dtype=np.float64)
    # Standard piecewise-linear HSV->RGB with s = v = 1, written per channel.
    k = (np.array([5.0, 3.0, 1.0]) + hue[..., None] * 6.0) % 6.0
    rgb = 1.0 - np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)
    return rgb.astype(np.float32)


def colour_table() -> np.ndarray:
    """RGB of every (hue index, shade level): [10, 256, 3] uint8.

    Entry [h, k] is round(hsv(h / 10, 1, 1) * k), i.e. hue h under shading k/255.
    """
    rgb = hue_to_rgb(np.arange(FACTOR_SIZES[0]) / FACTOR_SIZES[0])  # [10, 3]
    levels = np.arange(_NUM_SHADE_LEVELS, dtype=np.float32)
    return np.rint(rgb[:, None, :] * levels[None, :, None]).astype(np.uint8)


# --------------------------------------------------------------------------- #
# Ray casting
# --------------------------------------------------------------------------- #
def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Elementwise rather than `@`, so the templates do not depend on the BLAS.
    return np.sum(a * b, axis=-1)


def _normalize(v: np.ndarray) -> np.ndarray:
    return v / np.sqrt(_dot(v, v))[..., None]


def _camera_rays(orientation_deg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pinhole rays through every pixel centre, camera orbiting the object.

    The camera is held level and its image window shifted down to frame the
    object (a shift lens) rather than tilted down: tilting would make vertical
    edges converge, and at 64x64 that reads as a lip on top of cubes.

    Returns:
      eye: [O, 3]; directions: [O, 64*64, 3] unit vectors, pixels row-major.
    """
    theta = np.deg2rad(orientation_deg)
    zeros = np.zeros_like(theta)
    forward = np.stack([np.sin(theta), zeros, np.cos(theta)], axis=-1)  # horizontal
    eye = -_CAMERA_DISTANCE * forward + [0.0, _CAMERA_HEIGHT, 0.0]
    right = np.cross(forward, [0.0, 1.0, 0.0])
    up = np.array([0.0, 1.0, 0.0])
    # Tangent of the angle the target sits below the eye: where the window centre goes.
    shift = (_CAMERA_HEIGHT - _CAMERA_TARGET_HEIGHT) / _CAMERA_DISTANCE
    focal = (_IMAGE_SIZE / 2) / np.tan(np.deg2rad(_HALF_FIELD_OF_VIEW_DEG))
    offsets = (np.arange(_IMAGE_SIZE) + 0.5 - _IMAGE_SIZE / 2) / focal
    across = offsets[None, None, :, None]  # along columns, left to right
    down = offsets[None, :, None, None] + shift  # along rows, top to bottom
    directions = forward[:, None, None, :] + across * right[:, None, None, :] - down * up
    directions = _normalize(directions).reshape(len(theta), _NUM_PIXELS, 3)
    return eye, directions


def _wall_normals() -> np.ndarray:
    """Outward normals of the four walls, [4, 3]; the first two face the camera."""
    angles = np.deg2rad([45.0, 135.0, 225.0, 315.0])
    return np.stack([np.cos(angles), np.zeros(4), np.sin(angles)], axis=-1)


def _hit_room(
    eye: np.ndarray, directions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where rays from inside the room leave it through a wall or the floor.

    Args:
      eye: [O, 3]; directions: [O, P, 3].
    Returns:
      t: [O, P] distances; normal: [O, P, 3] inward normals; is_floor: [O, P].
    """
    outward = _wall_normals()
    # Centre of the room such that its corner at 45 degrees lies at
    # _CORNER_DISTANCE straight ahead of the orientation-0 camera.
    centre = np.array([0.0, 0.0, _CORNER_DISTANCE - np.sqrt(2.0) * _ROOM_HALF_WIDTH])
    along = _dot(directions[..., None, :], outward)  # [O, P, 4]
    gap = (_dot(centre, outward) + _ROOM_HALF_WIDTH) - _dot(eye[:, None, :], outward)  # [O, 4]
    with np.errstate(divide="ignore", invalid="ignore"):
        t_walls = np.where(along > _EPS, gap[:, None, :] / along, np.inf)
        dy = directions[..., 1]
        t_floor = np.where(dy < -_EPS, -eye[:, None, 1] / dy, np.inf)
    wall = np.argmin(t_walls, axis=-1)
    t_wall = np.take_along_axis(t_walls, wall[..., None], axis=-1)[..., 0]
    is_floor = t_floor < t_wall
    normal = np.where(is_floor[..., None], [0.0, 1.0, 0.0], -outward[wall])
    return np.minimum(t_floor, t_wall), normal, is_floor


def _first_root(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Smallest root > 0 of a t^2 + b t + c (inf if none); a > 0."""
    disc = b * b - 4.0 * a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        near = (-b - root) / (2.0 * a)
        far = (-b + root) / (2.0 * a)
    t = np.where(near > _EPS, near, np.where(far > _EPS, far, np.inf))
    return np.where(disc >= 0.0, t, np.inf)


def _hit_sphere(o: np.ndarray, d: np.ndarray, centre_y, radius) -> np.ndarray:
    oc = o - np.array([0.0, 1.0, 0.0]) * np.asarray(centre_y)[..., None]
    a = np.sum(d * d, axis=-1)
    b = 2.0 * np.sum(oc * d, axis=-1)
    c = np.sum(oc * oc, axis=-1) - radius**2
    return _first_root(a, b, c)


def _hit_cylinder_side(o, d, radius, y_low, y_high) -> np.ndarray:
    """Vertical cylinder wall, clipped to y_low <= y <= y_high."""
    a = np.maximum(d[..., 0] ** 2 + d[..., 2] ** 2, 1e-12)
    b = 2.0 * (o[..., 0] * d[..., 0] + o[..., 2] * d[..., 2])
    c = o[..., 0] ** 2 + o[..., 2] ** 2 - radius**2
    t = _first_root(a, b, c)
    with np.errstate(invalid="ignore"):
        y = o[..., 1] + t * d[..., 1]
    return np.where((y >= y_low) & (y <= y_high), t, np.inf)


def _hit_cube(o: np.ndarray, d: np.ndarray) -> np.ndarray:
    half = _OBJECT_RADIUS
    low = np.array([-half, 0.0, -half])
    high = np.array([half, 2.0 * half, half])
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = 1.0 / d
        t1, t2 = (low - o) * inverse, (high - o) * inverse
    t_enter = np.max(np.minimum(t1, t2), axis=-1)
    t_exit = np.min(np.maximum(t1, t2), axis=-1)
    hit = (t_exit >= t_enter) & (t_exit > _EPS)
    return np.where(hit, np.where(t_enter > _EPS, t_enter, t_exit), np.inf)


def _hit_cylinder(o: np.ndarray, d: np.ndarray) -> np.ndarray:
    radius, height = _OBJECT_RADIUS, 2.0 * _OBJECT_RADIUS
    t_side = _hit_cylinder_side(o, d, radius, 0.0, height)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_top = (height - o[..., 1]) / d[..., 1]
        x = o[..., 0] + t_top * d[..., 0]
        z = o[..., 2] + t_top * d[..., 2]
    on_top = (t_top > _EPS) & (x * x + z * z <= radius**2)
    return np.minimum(t_side, np.where(on_top, t_top, np.inf))


def _hit_sphere_object(o: np.ndarray, d: np.ndarray) -> np.ndarray:
    return _hit_sphere(o, d, _OBJECT_RADIUS, _OBJECT_RADIUS)


def _hit_capsule(o: np.ndarray, d: np.ndarray) -> np.ndarray:
    # A capsule is the union of a cylinder and two end spheres; the cylinder's
    # caps lie inside the spheres, so the nearest of the three hits is the entry.
    r = _CAPSULE_RADIUS
    top = _CAPSULE_HEIGHT - r
    return np.minimum.reduce(
        [_hit_cylinder_side(o, d, r, r, top), _hit_sphere(o, d, r, r), _hit_sphere(o, d, top, r)]
    )


def _object_normal(shape: int, p: np.ndarray) -> np.ndarray:
    """Outward unit normal at points p [..., 3] on the unit-scale object."""
    if shape == 0:  # cube: the face is the axis along which p is most extreme
        q = (p - [0.0, _OBJECT_RADIUS, 0.0]) / _OBJECT_RADIUS
        axis = np.argmax(np.abs(q), axis=-1)
        normal = np.zeros_like(p)
        side = np.sign(np.take_along_axis(q, axis[..., None], axis=-1))
        np.put_along_axis(normal, axis[..., None], side, axis=-1)
        return normal
    if shape == 1:
        height = 2.0 * _OBJECT_RADIUS
        on_top = p[..., 1] >= height - 1e-4
        radial = _normalize(p * [1.0, 0.0, 1.0] + [0.0, 1e-12, 0.0])
        return np.where(on_top[..., None], [0.0, 1.0, 0.0], radial)
    if shape == 2:
        return _normalize(p - [0.0, _OBJECT_RADIUS, 0.0])
    # capsule: from the closest point of its axis segment
    r = _CAPSULE_RADIUS
    axis_point = np.zeros_like(p)
    axis_point[..., 1] = np.clip(p[..., 1], r, _CAPSULE_HEIGHT - r)
    return _normalize(p - axis_point)


_OBJECT_HITS = (_hit_cube, _hit_cylinder, _hit_sphere_object, _hit_capsule)


def _hit_scaled_object(shape: int, scale: np.ndarray, o: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Ray parameter t at the object of each scale ([S]) for rays o, d [..., 3].

    Scaling the object by s about its base is the same as shrinking the ray by
    1/s; t is unchanged by that, so one unit-scale intersector serves all scales.
    Returns [S, ...].
    """
    s = scale.reshape((-1,) + (1,) * o.ndim)
    return _OBJECT_HITS[shape](o[None] / s, d[None] / s)


def _shadow_directions() -> np.ndarray:
    """Unit directions towards the light, sampled on a small cone: [K, 3]."""
    centre = _normalize(_LIGHT_TOWARDS)
    side = _normalize(np.cross(centre, [0.0, 0.0, 1.0]))
    other = np.cross(centre, side)
    angles = 2.0 * np.pi * np.arange(_SHADOW_RING_SAMPLES) / _SHADOW_RING_SAMPLES
    ring = centre + _SHADOW_CONE_RADIUS * (
        np.cos(angles)[:, None] * side + np.sin(angles)[:, None] * other
    )
    return _normalize(np.concatenate([centre[None], ring], axis=0))


def _object_lambert(normal: np.ndarray) -> np.ndarray:
    # Plain Lambert: strong contrast between faces is what makes a cube read as
    # a cube and a sphere as a sphere at 64x64.
    facing = np.maximum(_dot(normal, _normalize(_LIGHT_TOWARDS)), 0.0)
    return _AMBIENT + (1.0 - _AMBIENT) * facing


def _room_lambert(normal: np.ndarray) -> np.ndarray:
    # Half-Lambert (0.5 + 0.5 n.l) keeps the walls bright and evenly lit, as in
    # Shapes3D, while still telling the two walls apart.
    facing = 0.5 + 0.5 * _dot(normal, _normalize(_LIGHT_TOWARDS))
    return _AMBIENT + (1.0 - _AMBIENT) * facing


def _depth_factor(t: np.ndarray) -> np.ndarray:
    far = np.clip((t - _DEPTH_NEAR) / (_DEPTH_FAR - _DEPTH_NEAR), 0.0, 1.0)
    return 1.0 - _DEPTH_DARKENING * far


def _shadow_rays(room_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Origins and directions [N, K, 3] of the rays from points to the light."""
    directions = _shadow_directions()  # [K, 3]
    origins = np.broadcast_to(room_points[:, None, :], room_points.shape[:1] + directions.shape)
    return origins, np.broadcast_to(directions[None], origins.shape)


def _may_be_shadowed(room_points: np.ndarray, max_scale: float) -> np.ndarray:
    """[N] bool: some ray to the light crosses a cylinder enclosing every object."""
    radius = max_scale * max(np.sqrt(2.0) * _OBJECT_RADIUS, _CAPSULE_RADIUS)
    height = max_scale * max(2.0 * _OBJECT_RADIUS, _CAPSULE_HEIGHT)
    origins, directions = _shadow_rays(room_points)
    inside = np.hypot(origins[..., 0], origins[..., 2]) <= radius
    passes = np.isfinite(_hit_cylinder_side(origins, directions, radius, 0.0, height))
    return np.any(passes | inside, axis=-1)


def _light_fraction(shape: int, scale: np.ndarray, room_points: np.ndarray) -> np.ndarray:
    """Fraction of the light cone each room point sees past the object: [S, N]."""
    origins, directions = _shadow_rays(room_points)
    blocked = np.isfinite(_hit_scaled_object(shape, scale, origins, directions))  # [S, N, K]
    return 1.0 - blocked.mean(axis=-1)


def compute_geometry_templates() -> tuple[np.ndarray, np.ndarray]:
    """Ray casts every (scale, shape, orientation) combination.

    Returns:
      labels: [480, 64, 64] uint8 region per pixel (REGION_FLOOR/WALL/OBJECT).
      shading: [480, 64, 64] float32 in (0, 1], a multiple of 1/255 per pixel.
      Templates are ordered like the last three factors of the flat index:
      geometry = (scale * 4 + shape) * 15 + orientation.
    """
    scales = np.linspace(0.75, 1.25, FACTOR_SIZES[3])
    num_orientations = FACTOR_SIZES[5]
    eye, directions = _camera_rays(np.linspace(-30.0, 30.0, num_orientations))
    t_room, room_normal, is_floor = _hit_room(eye, directions)  # [O, P]
    room_points = eye[:, None, :] + t_room[..., None] * directions
    room_lambert = _room_lambert(room_normal) * _depth_factor(t_room)  # [O, P]

    # Casting shadow rays only from the few pixels that can be shadowed keeps
    # the precompute fast.
    near_object = _may_be_shadowed(room_points.reshape(-1, 3), scales.max())
    near_object = near_object.reshape(is_floor.shape)
    candidate_points = room_points[near_object]  # [N, 3]

    labels = np.empty((len(scales), len(SHAPE_NAMES), num_orientations, _NUM_PIXELS), np.uint8)
    shading = np.empty(labels.shape, np.float64)
    eyes = np.broadcast_to(eye[:, None, :], directions.shape)
    for shape in range(len(SHAPE_NAMES)):
        t_object = _hit_scaled_object(shape, scales, eyes, directions)  # [S, O, P]
        on_object = t_object < t_room
        hit_points = eyes + np.where(on_object, t_object, 0.0)[..., None] * directions
        local_points = hit_points / scales[:, None, None, None]
        object_shade = _object_lambert(_object_normal(shape, local_points))

        room_shade = np.broadcast_to(room_lambert, t_object.shape).copy()
        lit = _light_fraction(shape, scales, candidate_points)  # [S, N]
        shadowed = 1.0 - _SHADOW_STRENGTH * (1.0 - lit)
        room_shade[:, near_object] *= shadowed

        labels[:, shape] = np.where(
            on_object, REGION_OBJECT, np.where(is_floor, REGION_FLOOR, REGION_WALL)
        )
        shading[:, shape] = np.where(on_object, object_shade, room_shade)

    levels = np.clip(np.rint(shading * 255.0), _MIN_SHADE_LEVEL, 255)
    shape_2d = (_NUM_GEOMETRIES, _IMAGE_SIZE, _IMAGE_SIZE)
    return labels.reshape(shape_2d), (levels / 255.0).astype(np.float32).reshape(shape_2d)


# --------------------------------------------------------------------------- #
# Dataset
# --------------------------------------------------------------------------- #
class Shapes3DSynth(FactorDataset):
    """Procedural stand-in for Shapes3D with the official factors and ordering.

    Images are rendered on demand from 480 geometry templates built on first use
    (about a second) and cached on the instance, so no image array is stored.
    Every method is a pure function of its arguments: no global state or RNG.
    """

    name = "shapes3d_synth"
    image_shape = (_IMAGE_SIZE, _IMAGE_SIZE, 3)
    factor_names = FACTOR_NAMES
    factor_sizes = FACTOR_SIZES

    def __init__(self) -> None:
        hue_values = np.arange(10) / 10.0
        self.factor_values = (
            hue_values,
            hue_values.copy(),
            hue_values.copy(),
            np.linspace(0.75, 1.25, 8),
            np.arange(4, dtype=np.float64),
            np.linspace(-30.0, 30.0, 15),
        )
        super().__init__()
        self._templates: tuple[np.ndarray, np.ndarray] | None = None
        # Input pipelines render from background threads: build templates once.
        self._templates_lock = threading.Lock()
        self._pixel_codes: np.ndarray | None = None
        self._colours = colour_table()
        self._palette_offsets = (np.arange(_RENDER_CHUNK, dtype=np.int32) * _NUM_CODES)[:, None]

    # -- templates ---------------------------------------------------------- #
    def geometry_templates(self) -> tuple[np.ndarray, np.ndarray]:
        """(labels [480, 64, 64] uint8, shading [480, 64, 64] float32), cached.

        Template g belongs to scale, shape, orientation = unravel(g, (8, 4, 15)).
        """
        with self._templates_lock:
            if self._templates is None:
                labels, shading = compute_geometry_templates()
                levels = np.rint(shading * 255.0).astype(np.int32)
                # One code per pixel says both which region's hue and which
                # shade level to look up, so rendering is one gather per pixel.
                codes = labels.astype(np.int32) * _NUM_SHADE_LEVELS + levels
                self._pixel_codes = codes.reshape(_NUM_GEOMETRIES, _NUM_PIXELS)
                self._templates = (labels, shading)
        return self._templates

    # -- rendering ---------------------------------------------------------- #
    def render(self, factors: np.ndarray) -> np.ndarray:
        """[B, 6] factor indices (FACTOR_NAMES order) -> [B, 64, 64, 3] uint8."""
        factors = self.check_factors(factors)
        geometry = factors[:, 3:] @ self._strides[3:]
        return self._render_parts(factors[:, :_NUM_HUE_FACTORS], geometry)

    def _images_at(self, index: np.ndarray) -> np.ndarray:
        geometry = index % _NUM_GEOMETRIES
        hues = (index[:, None] // self._strides[:_NUM_HUE_FACTORS]) % np.array(
            FACTOR_SIZES[:_NUM_HUE_FACTORS]
        )
        return self._render_parts(hues, geometry)

    def _render_parts(self, hues: np.ndarray, geometry: np.ndarray) -> np.ndarray:
        """hues: [B, 3] hue indices of floor, wall, object; geometry: [B]."""
        self.geometry_templates()
        batch = len(geometry)
        pixels = np.empty((batch, _NUM_PIXELS, 3), np.uint8)
        # Chunks small enough that one chunk's codes, palettes and output stay
        # in cache: about twice as fast as one gather over a large batch.
        for start in range(0, batch, _RENDER_CHUNK):
            stop = min(start + _RENDER_CHUNK, batch)
            # Per image, the colour of every pixel code, stacked so that one
            # flat gather serves the whole chunk.
            palettes = self._colours[hues[start:stop]].reshape(-1, 3)  # [C * _NUM_CODES, 3]
            codes = self._pixel_codes[geometry[start:stop]]  # [C, P], a fresh copy
            codes += self._palette_offsets[: stop - start]
            # mode="clip" lets take write straight into `out` (codes are in range).
            np.take(palettes, codes, axis=0, out=pixels[start:stop], mode="clip")
        return pixels.reshape((batch,) + self.image_shape)
