r"""Procedural Cars3D-like views of toy car models, rendered on demand with no download.

Cars3D (Reed et al., 2015, "Deep Visual Analogy-Making") shows 183 car CAD models,
each from 24 azimuths and 4 elevations, as 64x64x3 images of one car on a white
background. This module reproduces that grid procedurally, on a black background
(below), with the same factor
names, sizes, stored values and flat-index order as the TFDS-backed `Cars3D`
(row-major over (elevation 4, azimuth 24, object 183), object fastest), so code
written for the real data runs on it unchanged.

Car models (world units are metres; x points to the car's nose, y up, z to the
car's right; every car is mirror symmetric in z, its length centred on x = 0 and
its tyres standing on the ground y = 0):
  * body: a convex polyhedron, the intersection of 16 half-spaces: a box from the
    ground clearance up to the belt line, cut by a sloping bonnet and boot, lower
    front and rear chamfers (painted dark: bumpers), shoulder chamfers along the
    top side edges, and rounded-off corners in plan at the nose and tail;
  * cabin: a second convex polyhedron on the belt line: flat roof, raked
    windscreen and rear window (glass), sides leaning inwards towards the roof
    (tumblehome) with glass side windows between painted pillars and sills;
  * wheels: four cylinders along the z axis, dark tyres with lighter hubs on
    their outer end faces; those stand 1 cm proud of the body sides, so the
    full wheel shows in a side view (the body has no wheel arches);
  * lamps: pale headlamps and a dark grille on the front face, red tail lamps on
    the rear face, so that front and rear read differently.
The 183 models come from a fixed table (`car_models`) drawn once from
`np.random.default_rng(MODEL_TABLE_SEED)`: proportions are uniform in the ranges
of `_SHAPE_RANGES` and then made consistent (wheels under the bonnet, a belt line
above the wheels); paints cycle through `PAINTS` in shuffled rounds with a
brightness jitter. A candidate whose unit coordinates of the outline-defining
proportions (OUTLINE_PARAMETER_NAMES) lie closer than `_MIN_OUTLINE_DISTANCE` to
those of an accepted model with the same or a similar paint is drawn again, so no
two models are near copies.

Camera (orthographic: the image is a parallel projection, so the car's size in
the image does not depend on the distance, and the two horizon-level views from
opposite azimuths a and a + 180 are mirror images in outline):
  * it looks at the centre of the car's bounding box from the direction
    (cos e cos a, sin e, -cos e sin a): elevation e in ELEVATION_DEGREES above the
    horizon, azimuth a = 15 deg x azimuth index counter-clockwise seen from above.
    Azimuth 0 is the front view (the camera faces the nose), 90 the car's left
    side (nose to the image left), 180 the rear, 270 the right side;
  * the image is held upright (world up projects to image up) and spans
    64 / PIXELS_PER_METRE metres: a 4.4 m car covers about 76% of the width in a
    side view (68-83% over the table); every car stays at least a few pixels
    inside the canvas at every view;
  * cosines and sines of the azimuths come from one table that is exactly
    symmetric, so mirrored views are cast from exactly mirrored rays: as every
    car is symmetric, the views at azimuths a and -a are mirror images in outline
    and materials (not in shading, which the off-centre light breaks);
  * each pixel averages SUPERSAMPLING x SUPERSAMPLING rays on a regular grid
    (deterministic anti-aliasing). Pixels no ray of which hits the car are exactly
    BACKGROUND; every car material is bright enough (its brightest channel lit at
    least AMBIENT x 0.075) that a pixel one of whose rays hits the car differs
    from it.

The background is black, not the real set's white: on images that are mostly
white, the MCQ-VAE of the CT-VAE configs collapses to one code (its quantiser's
loss explodes, the decoder settles on a constant image, 10.9 dB test PSNR through
all of `:small`'s stage 1), while the same network trains on dark-background images
(docs/datasets.md, "Why the stand-ins' backgrounds are black").

Lighting: Lambertian, albedo x (AMBIENT + (1 - AMBIENT) max(0, n . l)), with one
key light fixed relative to the camera (a turntable studio: the car turns, the
lights stay), from above, in front of the car and to the image left. No shadows,
no specular highlights, no gamma: colours are albedos scaled to 0-255.

Caching: ray casting one image takes a few milliseconds, so `Cars3DSynth` keeps
every image it has rendered (at most 17 568 x 12 288 B = 216 MB) and serves
repeated requests from memory. An image is a pure function of its factor
indices, whatever else is in the batch or the cache.

Make a contact sheet (one row per factor):
  python -m causal_disent.data.show cars3d_synth --out=sheet.png
"""

from __future__ import annotations

import dataclasses
import functools
import threading

import numpy as np

from causal_disent.data.base import FactorDataset

FACTOR_NAMES = ("elevation", "azimuth", "object")
FACTOR_SIZES = (4, 24, 183)
NUM_ELEVATIONS, NUM_AZIMUTHS, NUM_MODELS = FACTOR_SIZES

ELEVATION_DEGREES = (0.0, 10.0, 20.0, 30.0)
AZIMUTH_STEP_DEGREES = 15.0

IMAGE_SIZE = 64
SUPERSAMPLING = 3  # rays per pixel along each image axis
PIXELS_PER_METRE = 11.0
BACKGROUND = (0, 0, 0)

AMBIENT = 0.35
# Towards the key light, in the camera's (image right, image up, towards camera)
# frame. The sideways component makes the two faces seen in a three-quarter view
# differ in brightness, which is what makes the car's orientation readable.
LIGHT_IN_CAMERA_FRAME = (-0.35, 0.7, 0.6)

MODEL_TABLE_SEED = 183_2015

# Materials of a ray sample; 0 is no hit (background).
(
    MATERIAL_NONE,
    MATERIAL_PAINT,
    MATERIAL_GLASS,
    MATERIAL_TYRE,
    MATERIAL_HUB,
    MATERIAL_HEADLAMP,
    MATERIAL_TAIL_LAMP,
    MATERIAL_TRIM,
) = range(8)
NUM_MATERIALS = 8

# Fixed albedos of the materials that do not vary between models (RGB in [0, 1]).
_GLASS = (0.13, 0.16, 0.20)
_TYRE = (0.07, 0.07, 0.075)
_HEADLAMP = (0.86, 0.86, 0.78)
_TAIL_LAMP = (0.66, 0.07, 0.06)
_TRIM = (0.17, 0.17, 0.18)

# Car paints (albedo, RGB in [0, 1]): metallic greys and whites as common on real
# cars as the colours. No channel exceeds _MAX_ALBEDO after jitter, so highlights
# stay below white.
PAINTS: tuple[tuple[str, tuple[float, float, float]], ...] = (
    ("silver", (0.70, 0.71, 0.73)),
    ("pearl white", (0.84, 0.84, 0.81)),
    ("graphite", (0.32, 0.33, 0.35)),
    ("black", (0.17, 0.17, 0.18)),
    ("signal red", (0.74, 0.11, 0.09)),
    ("burgundy", (0.44, 0.08, 0.13)),
    ("navy", (0.10, 0.16, 0.40)),
    ("royal blue", (0.16, 0.34, 0.74)),
    ("sky blue", (0.46, 0.62, 0.80)),
    ("racing green", (0.08, 0.30, 0.17)),
    ("lime green", (0.44, 0.64, 0.20)),
    ("yellow", (0.86, 0.74, 0.12)),
    ("orange", (0.86, 0.42, 0.10)),
    ("beige", (0.76, 0.68, 0.52)),
    ("brown", (0.40, 0.25, 0.14)),
    ("teal", (0.08, 0.45, 0.46)),
    ("purple", (0.38, 0.20, 0.52)),
    ("champagne", (0.72, 0.62, 0.40)),
    ("steel blue", (0.30, 0.37, 0.46)),
)
_MAX_ALBEDO = 0.86
_PAINT_JITTER = (0.9, 1.04)  # brightness factor range

# Proportions, each drawn uniformly in its range (metres unless a fraction).
_SHAPE_RANGES: tuple[tuple[str, float, float], ...] = (
    ("length", 3.95, 4.80),
    ("width", 1.66, 1.95),
    ("clearance", 0.13, 0.24),  # ground to the body's underside
    ("body_height", 0.50, 0.72),  # underside to belt line
    ("cabin_height", 0.36, 0.56),  # belt line to roof
    ("bonnet_fraction", 0.22, 0.34),  # nose to windscreen base, of the length
    ("rear_deck_fraction", 0.02, 0.24),  # rear window base to tail, of the length
    ("windscreen_fraction", 0.22, 0.36),  # windscreen run, of the cabin length
    ("rear_window_fraction", 0.10, 0.40),  # rear window run, of the cabin length
    ("bonnet_drop", 0.06, 0.24),  # how far the bonnet falls to the nose
    ("boot_drop", 0.04, 0.20),  # how far the boot lid falls to the tail
    ("wheel_radius", 0.29, 0.37),
    ("front_overhang_extra", 0.30, 0.60),  # nose to front axle, beyond a radius
    ("rear_overhang_extra", 0.22, 0.60),  # tail to rear axle, beyond a radius
    ("tyre_width", 0.17, 0.26),
    ("shoulder", 0.05, 0.12),  # inset of the shoulder chamfer at the belt line
    ("tumblehome", 0.10, 0.24),  # inward lean of each cabin side at the roof
    ("corner_rounding", 0.12, 0.32),  # plan-view chamfer at nose and tail corners
    ("hub_brightness", 0.25, 0.72),
)
SHAPE_PARAMETER_NAMES = tuple(name for name, _, _ in _SHAPE_RANGES)
# The proportions that change a car's outline most; two models with similar
# paints must lie at least _MIN_OUTLINE_DISTANCE apart in their unit coordinates.
OUTLINE_PARAMETER_NAMES = (
    "length", "clearance", "body_height", "cabin_height", "bonnet_fraction",
    "rear_deck_fraction", "rear_window_fraction",
)
_MIN_OUTLINE_DISTANCE = 0.6
_SIMILAR_PAINT_DISTANCE = 0.35  # RGB distance between palette albedos

# The cabin reaches this far down into the body so that no gap opens along the belt line.
_CABIN_OVERLAP = 0.05
_WHEEL_PROUD = 0.01  # how far the tyre's outer face stands out of the body side
_FRONT_CHAMFER = (0.14, 0.20)  # (rise, run) of the lower front chamfer
_REAR_CHAMFER = (0.10, 0.15)
_SHOULDER_DROP_RATIO = 1.6  # vertical drop of the shoulder chamfer per unit inset
_CORNER_RUN_RATIO = 1.3  # length of the plan chamfer per unit of width cut
_HUB_FRACTION = 0.62  # hub radius, of the wheel radius
# Window frame widths (metres): sill, header, A-, B- and C-pillar.
_SILL, _HEADER = 0.06, 0.05
_A_PILLAR, _B_PILLAR, _C_PILLAR = 0.07, 0.07, 0.12
_MIN_ROOF_FOR_B_PILLAR = 0.9

_CAMERA_DISTANCE = 10.0  # orthographic: only keeps every hit at t > 0
_PARALLEL = 1e-12  # |n . d| below this: the ray runs along the plane
_SAMPLES = IMAGE_SIZE * SUPERSAMPLING


# --------------------------------------------------------------------------- #
# Model table
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class CarModel:
    """One car's proportions (metres, see _SHAPE_RANGES) and colours (RGB albedos)."""

    length: float
    width: float
    clearance: float
    body_height: float
    cabin_height: float
    bonnet_length: float  # nose to windscreen base
    rear_deck_length: float  # rear window base to tail
    windscreen_run: float
    rear_window_run: float
    bonnet_drop: float
    boot_drop: float
    wheel_radius: float
    front_overhang: float  # nose to front axle
    rear_overhang: float  # tail to rear axle
    tyre_width: float
    shoulder: float
    tumblehome: float
    corner_rounding: float
    paint_name: str
    paint: tuple[float, float, float]
    hub: tuple[float, float, float]

    @property
    def belt_height(self) -> float:
        return self.clearance + self.body_height

    @property
    def roof_height(self) -> float:
        return self.belt_height + self.cabin_height

    @property
    def roof_length(self) -> float:
        cabin = self.length - self.bonnet_length - self.rear_deck_length
        return cabin - self.windscreen_run - self.rear_window_run


def _model_from_unit(unit: np.ndarray, paint_name: str, paint: np.ndarray) -> CarModel:
    """Maps unit-cube coordinates [len(_SHAPE_RANGES)] to a consistent CarModel."""
    p = {name: low + u * (high - low) for (name, low, high), u in zip(_SHAPE_RANGES, unit)}
    length, radius = p["length"], p["wheel_radius"]
    # The belt line clears the wheels, so the tyres tuck under the body.
    body_height = max(p["body_height"], 2.0 * radius + 0.08 - p["clearance"])
    belt = p["clearance"] + body_height
    bonnet = p["bonnet_fraction"] * length
    rear_deck = p["rear_deck_fraction"] * length
    cabin = length - bonnet - rear_deck
    front_overhang = radius + p["front_overhang_extra"]
    rear_overhang = radius + p["rear_overhang_extra"]

    def max_drop(slope_length: float, tyre_reach: float) -> float:
        # The slope (falling `drop` over `slope_length` to the end of the car)
        # must stay 5 cm above the tyre's top where the tyre ends, `tyre_reach`
        # from that end of the car.
        into_slope = slope_length - tyre_reach
        if into_slope <= 0.0:
            return np.inf
        return (belt - 2.0 * radius - 0.05) * slope_length / into_slope

    bonnet_drop = min(p["bonnet_drop"], max_drop(bonnet, front_overhang - radius))
    # A short rear deck (a hatchback) cannot fall steeply: its tail stays upright.
    boot_drop = min(p["boot_drop"], 0.6 * rear_deck, max_drop(rear_deck, rear_overhang - radius))
    jittered = tuple(float(c) for c in np.minimum(paint, _MAX_ALBEDO))
    hub = (p["hub_brightness"],) * 2 + (p["hub_brightness"] * 1.03,)
    return CarModel(
        length=length,
        width=p["width"],
        clearance=p["clearance"],
        body_height=body_height,
        cabin_height=p["cabin_height"],
        bonnet_length=bonnet,
        rear_deck_length=rear_deck,
        windscreen_run=p["windscreen_fraction"] * cabin,
        rear_window_run=p["rear_window_fraction"] * cabin,
        bonnet_drop=bonnet_drop,
        boot_drop=boot_drop,
        wheel_radius=radius,
        front_overhang=front_overhang,
        rear_overhang=rear_overhang,
        tyre_width=p["tyre_width"],
        shoulder=p["shoulder"],
        tumblehome=p["tumblehome"],
        corner_rounding=p["corner_rounding"],
        paint_name=paint_name,
        paint=jittered,
        hub=tuple(float(min(c, _MAX_ALBEDO)) for c in hub),
    )


@functools.lru_cache(maxsize=1)
def _model_table() -> tuple[tuple[CarModel, ...], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(MODEL_TABLE_SEED)
    paint_order = np.concatenate(
        [rng.permutation(len(PAINTS)) for _ in range(-(-NUM_MODELS // len(PAINTS)))]
    )[:NUM_MODELS]
    palette = np.array([albedo for _, albedo in PAINTS])
    similar_paints = np.sqrt(((palette[:, None] - palette[None]) ** 2).sum(-1))
    similar_paints = similar_paints < _SIMILAR_PAINT_DISTANCE  # [paints, paints]
    outline = [SHAPE_PARAMETER_NAMES.index(name) for name in OUTLINE_PARAMETER_NAMES]
    units = np.empty((NUM_MODELS, len(_SHAPE_RANGES)))
    models = []
    for model, paint_index in enumerate(paint_order):
        rivals = units[:model][similar_paints[paint_index, paint_order[:model]]][:, outline]
        while True:
            unit = rng.random(len(_SHAPE_RANGES))
            distances = np.sqrt(((rivals - unit[outline]) ** 2).sum(axis=1))
            if not len(distances) or distances.min() >= _MIN_OUTLINE_DISTANCE:
                break
        units[model] = unit
        name, albedo = PAINTS[paint_index]
        brightness = rng.uniform(*_PAINT_JITTER)
        models.append(_model_from_unit(unit, name, np.array(albedo) * brightness))
    return tuple(models), units, paint_order


def car_models() -> tuple[CarModel, ...]:
    """The 183 car models, object index order; the same on every call and machine."""
    return _model_table()[0]


def model_shape_coordinates() -> tuple[np.ndarray, np.ndarray]:
    """Where each model was drawn: unit shape coordinates [183, len(_SHAPE_RANGES)]
    (order SHAPE_PARAMETER_NAMES) and paint indices into PAINTS [183]."""
    _, units, paint_order = _model_table()
    return units.copy(), paint_order.copy()


# --------------------------------------------------------------------------- #
# Scene: the car as convex parts
# --------------------------------------------------------------------------- #
def _plane(normal, point) -> tuple[np.ndarray, float]:
    """Half-space n . p <= n . point with unit outward normal n."""
    normal = np.asarray(normal, np.float64)
    normal = normal / np.sqrt(np.sum(normal * normal))
    return normal, float(np.sum(normal * np.asarray(point, np.float64)))


@dataclasses.dataclass(frozen=True)
class _ConvexPart:
    """Intersection of half-spaces normals[i] . p <= offsets[i], inside a box."""

    normals: np.ndarray  # [P, 3] unit, outward
    offsets: np.ndarray  # [P]
    box_low: np.ndarray  # [3] bounding box, for culling rays
    box_high: np.ndarray


@dataclasses.dataclass(frozen=True)
class _Wheel:
    centre_x: float
    radius: float  # the centre is one radius above the ground
    z_low: float
    z_high: float


@dataclasses.dataclass(frozen=True)
class _CarScene:
    """A model's geometry, ready to ray cast, with the face indices materials need."""

    model: CarModel
    body: _ConvexPart
    cabin: _ConvexPart
    wheels: tuple[_Wheel, ...]
    centre: np.ndarray  # [3] the bounding box centre the camera looks at


# Face order of the body polyhedron.
(
    _BODY_BOTTOM, _BODY_TOP, _BODY_FRONT, _BODY_REAR, _BODY_RIGHT, _BODY_LEFT,
    _BODY_BONNET, _BODY_BOOT, _BODY_FRONT_CHAMFER, _BODY_REAR_CHAMFER,
    _BODY_RIGHT_SHOULDER, _BODY_LEFT_SHOULDER,
) = range(12)  # then four plan-view corner chamfers
# Face order of the cabin polyhedron.
(
    _CABIN_BASE, _CABIN_ROOF, _CABIN_WINDSCREEN, _CABIN_REAR_WINDOW, _CABIN_RIGHT, _CABIN_LEFT,
) = range(6)


def _body_part(m: CarModel) -> _ConvexPart:
    front, rear, half_width = m.length / 2, -m.length / 2, m.width / 2
    bottom, belt = m.clearance, m.belt_height
    rise, run = _FRONT_CHAMFER
    rear_rise, rear_run = _REAR_CHAMFER
    shoulder_drop = _SHOULDER_DROP_RATIO * m.shoulder
    corner_run = _CORNER_RUN_RATIO * m.corner_rounding
    planes = [
        _plane((0, -1, 0), (0, bottom, 0)),
        _plane((0, 1, 0), (0, belt, 0)),
        _plane((1, 0, 0), (front, 0, 0)),
        _plane((-1, 0, 0), (rear, 0, 0)),
        _plane((0, 0, 1), (0, 0, half_width)),
        _plane((0, 0, -1), (0, 0, -half_width)),
        # Through (nose, belt - drop) and (windscreen base, belt).
        _plane((m.bonnet_drop, m.bonnet_length, 0), (front, belt - m.bonnet_drop, 0)),
        _plane((-m.boot_drop, max(m.rear_deck_length, 1e-3), 0), (rear, belt - m.boot_drop, 0)),
        _plane((rise, -run, 0), (front, bottom + rise, 0)),
        _plane((-rear_rise, -rear_run, 0), (rear, bottom + rear_rise, 0)),
        _plane((0, m.shoulder, shoulder_drop), (0, belt - shoulder_drop, half_width)),
        _plane((0, m.shoulder, -shoulder_drop), (0, belt - shoulder_drop, -half_width)),
    ]
    for end, sign_x in ((front, 1.0), (rear, -1.0)):
        for sign_z in (1.0, -1.0):
            normal = (sign_x * m.corner_rounding, 0, sign_z * corner_run)
            planes.append(_plane(normal, (end, 0, sign_z * (half_width - m.corner_rounding))))
    normals, offsets = zip(*planes)
    return _ConvexPart(
        np.stack(normals), np.array(offsets),
        np.array([rear, bottom, -half_width]), np.array([front, belt, half_width]),
    )


def _cabin_part(m: CarModel) -> _ConvexPart:
    windscreen_base = m.length / 2 - m.bonnet_length
    rear_window_base = -m.length / 2 + m.rear_deck_length
    belt, roof, height = m.belt_height, m.roof_height, m.cabin_height
    half_width = m.width / 2 - m.shoulder - 0.01
    planes = [
        _plane((0, -1, 0), (0, belt - _CABIN_OVERLAP, 0)),
        _plane((0, 1, 0), (0, roof, 0)),
        _plane((height, m.windscreen_run, 0), (windscreen_base, belt, 0)),
        _plane((-height, m.rear_window_run, 0), (rear_window_base, belt, 0)),
        _plane((0, m.tumblehome, height), (0, belt, half_width)),
        _plane((0, m.tumblehome, -height), (0, belt, -half_width)),
    ]
    normals, offsets = zip(*planes)
    # Below the belt line (hidden in the body) the raked and leaning planes
    # spread the cabin a little beyond its base: the box reaches that far too.
    reach_x = _CABIN_OVERLAP * max(m.windscreen_run, m.rear_window_run) / height
    reach_z = _CABIN_OVERLAP * m.tumblehome / height
    return _ConvexPart(
        np.stack(normals), np.array(offsets),
        np.array([rear_window_base - reach_x, belt - _CABIN_OVERLAP, -half_width - reach_z]),
        np.array([windscreen_base + reach_x, roof, half_width + reach_z]),
    )


@functools.lru_cache(maxsize=None)
def _scene(model_index: int) -> _CarScene:
    m = car_models()[model_index]
    outer = m.width / 2 + _WHEEL_PROUD
    wheels = tuple(
        _Wheel(x, m.wheel_radius, *sorted((side * outer, side * (outer - m.tyre_width))))
        for x in (m.length / 2 - m.front_overhang, -m.length / 2 + m.rear_overhang)
        for side in (1.0, -1.0)
    )
    return _CarScene(
        m, _body_part(m), _cabin_part(m), wheels, np.array([0.0, m.roof_height / 2, 0.0])
    )


# --------------------------------------------------------------------------- #
# Camera and ray casting
# --------------------------------------------------------------------------- #
def _dot(vectors: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """[..., 3] . [3] -> [...]. Written out rather than `@`, so results do not
    depend on the BLAS and mirrored inputs give exactly mirrored results."""
    return vectors[..., 0] * vector[0] + vectors[..., 1] * vector[1] + vectors[..., 2] * vector[2]


def _azimuth_cos_sin() -> np.ndarray:
    """[24, 2] (cos, sin) of 15 deg x k, exactly symmetric: k -> 24 - k negates
    the sine and k -> k + 12 negates both, so mirrored and opposite views are
    computed from exactly mirrored rays."""
    quarter = NUM_AZIMUTHS // 4
    angles = np.deg2rad(AZIMUTH_STEP_DEGREES * np.arange(quarter + 1))
    cos, sin = np.cos(angles), np.sin(angles)
    cos[-1], sin[0] = 0.0, 0.0  # 90 and 0 degrees exactly
    first_half = np.concatenate([np.stack([cos, sin], -1), np.stack([-cos, sin], -1)[-2::-1]])
    second_half = first_half[1:-1] * [1.0, -1.0]
    return np.concatenate([first_half, second_half[::-1]])


_AZIMUTH_COS_SIN = _azimuth_cos_sin()


def _camera_frame(elevation_index: int, azimuth_index: int) -> tuple[np.ndarray, ...]:
    """(towards_camera, image_right, image_up): [3] orthonormal, right-handed as
    right x up = towards_camera."""
    elevation = np.deg2rad(ELEVATION_DEGREES[elevation_index])
    cos_e, sin_e = (1.0, 0.0) if elevation == 0.0 else (np.cos(elevation), np.sin(elevation))
    cos_a, sin_a = _AZIMUTH_COS_SIN[azimuth_index]
    towards = np.array([cos_e * cos_a, sin_e, -cos_e * sin_a])
    right = np.array([-sin_a, 0.0, -cos_a])
    up = np.array([-sin_e * cos_a, cos_e, sin_e * sin_a])
    return towards, right, up


def _sample_offsets() -> np.ndarray:
    """[192] ray positions across the image in metres from its centre, left to
    right; exactly antisymmetric so that mirrored views mirror bit for bit."""
    half = (np.arange(_SAMPLES // 2) + 0.5) / (SUPERSAMPLING * PIXELS_PER_METRE)
    return np.concatenate([-half[::-1], half])


_OFFSETS = _sample_offsets()
# Row c picks, per axis, the high (True) or low end of a box: its 8 corners.
_BOX_CORNER_SELECTORS = (np.arange(8)[:, None] >> np.arange(3)) % 2 == 1


@dataclasses.dataclass(frozen=True)
class ViewSamples:
    """What every ray of one view hits; rays on a [192, 192] grid, rows top to bottom.

    material: [192, 192] uint8 MATERIAL_* (MATERIAL_NONE: background);
    normal: [192, 192, 3] unit outward normal of the surface hit (0 for background);
    towards_camera, image_right, image_up: [3] the camera frame of the view.
    """

    material: np.ndarray
    normal: np.ndarray
    towards_camera: np.ndarray
    image_right: np.ndarray
    image_up: np.ndarray


class _RayGrid:
    """Orthographic rays of one view: origin(row, col) = eye + s[col] right + t[row] up."""

    def __init__(self, centre: np.ndarray, elevation_index: int, azimuth_index: int):
        self.towards, self.right, self.up = _camera_frame(elevation_index, azimuth_index)
        self.direction = -self.towards
        self.eye = centre + _CAMERA_DISTANCE * self.towards
        self.centre = centre
        self.across = _OFFSETS  # s per column
        self.along_up = -_OFFSETS  # t per row (rows run downwards)

    def window(self, low: np.ndarray, high: np.ndarray) -> tuple[slice, slice]:
        """Rows and columns whose rays can meet the box [low, high] (one sample spare)."""
        corners = np.where(_BOX_CORNER_SELECTORS, high, low)  # [8, 3]
        relative = corners - self.centre
        s = _dot(relative, self.right)
        t = _dot(relative, self.up)
        first_col = max(int(np.searchsorted(_OFFSETS, s.min())) - 1, 0)
        last_col = min(int(np.searchsorted(_OFFSETS, s.max(), "right")) + 1, _SAMPLES)
        first_row = max(int(np.searchsorted(_OFFSETS, -t.max())) - 1, 0)
        last_row = min(int(np.searchsorted(_OFFSETS, -t.min(), "right")) + 1, _SAMPLES)
        return slice(first_row, last_row), slice(first_col, last_col)

    def coordinate(self, axis: int, rows: slice, cols: slice) -> np.ndarray:
        """[r, c] world coordinate `axis` of the ray origins in the window."""
        return (
            self.eye[axis]
            + self.across[cols][None, :] * self.right[axis]
            + self.along_up[rows][:, None] * self.up[axis]
        )

    def points(self, t: np.ndarray, rows: slice, cols: slice) -> list[np.ndarray]:
        """[x, y, z], each [r, c]: where the rays of the window are at distance t."""
        return [self.coordinate(a, rows, cols) + t * self.direction[a] for a in range(3)]


def _cast_convex(part: _ConvexPart, rays: _RayGrid) -> tuple:
    """Entry distance, entry face and the window of rays meeting a convex part.

    Returns (t [r, c] with inf where missed, face [r, c] int, rows, cols).
    """
    rows, cols = rays.window(part.box_low, part.box_high)
    shape = (rows.stop - rows.start, cols.stop - cols.start)
    t_enter = np.full(shape, -np.inf)
    t_exit = np.full(shape, np.inf)
    face = np.zeros(shape, np.int64)
    inside = np.ones(shape, bool)
    # Every term is scalar per plane except the ray origin's, which is linear in
    # the sample grid: one broadcast per plane.
    eye_side = part.offsets - _dot(part.normals, rays.eye)
    per_col = _dot(part.normals, rays.right)
    per_row = _dot(part.normals, rays.up)
    facing = _dot(part.normals, rays.direction)
    for plane in range(len(part.offsets)):
        slack = (
            eye_side[plane]
            - rays.across[cols][None, :] * per_col[plane]
            - rays.along_up[rows][:, None] * per_row[plane]
        )
        if abs(facing[plane]) < _PARALLEL:
            inside &= slack >= 0.0
            continue
        t_plane = slack / facing[plane]
        if facing[plane] < 0.0:
            later = t_plane > t_enter
            t_enter = np.where(later, t_plane, t_enter)
            face = np.where(later, plane, face)
        else:
            t_exit = np.minimum(t_exit, t_plane)
    hit = inside & (t_enter <= t_exit)
    return np.where(hit, t_enter, np.inf), face, rows, cols


def _cast_wheel(wheel: _Wheel, rays: _RayGrid) -> tuple:
    """Entry distance into a wheel, whether it entered through an end face, and the
    hit point's distance from the axle over the radius. Returns
    (t [r, c] inf where missed, on_end_face [r, c] bool, radial [r, c], rows, cols)."""
    r = wheel.radius
    low = np.array([wheel.centre_x - r, 0.0, wheel.z_low])
    high = np.array([wheel.centre_x + r, 2.0 * r, wheel.z_high])
    rows, cols = rays.window(low, high)
    dx, dy, dz = rays.direction
    px = rays.coordinate(0, rows, cols) - wheel.centre_x
    py = rays.coordinate(1, rows, cols) - r
    oz = rays.coordinate(2, rows, cols)
    squared_speed = dx * dx + dy * dy
    if squared_speed < _PARALLEL:  # looking along the axle
        within = px * px + py * py <= r * r
        t_side_in = np.where(within, -np.inf, np.inf)
        t_side_out = np.where(within, np.inf, -np.inf)
    else:
        half_b = px * dx + py * dy
        disc = half_b * half_b - squared_speed * (px * px + py * py - r * r)
        root = np.sqrt(np.maximum(disc, 0.0))
        t_side_in = np.where(disc >= 0.0, (-half_b - root) / squared_speed, np.inf)
        t_side_out = np.where(disc >= 0.0, (-half_b + root) / squared_speed, -np.inf)
    if abs(dz) < _PARALLEL:
        within = (oz >= wheel.z_low) & (oz <= wheel.z_high)
        t_end_in = np.where(within, -np.inf, np.inf)
        t_end_out = np.where(within, np.inf, -np.inf)
    else:
        t_low, t_high = (wheel.z_low - oz) / dz, (wheel.z_high - oz) / dz
        t_end_in, t_end_out = np.minimum(t_low, t_high), np.maximum(t_low, t_high)
    t_enter = np.maximum(t_side_in, t_end_in)
    hit = t_enter <= np.minimum(t_side_out, t_end_out)
    t = np.where(hit, t_enter, np.inf)
    on_end_face = t_end_in >= t_side_in
    safe_t = np.where(hit, t_enter, 0.0)
    radial = np.sqrt((px + safe_t * dx) ** 2 + (py + safe_t * dy) ** 2) / r
    return t, on_end_face, radial, rows, cols


def _body_materials(m: CarModel, face: np.ndarray, points: list[np.ndarray]) -> np.ndarray:
    _, y, z = points
    material = np.full(face.shape, MATERIAL_PAINT, np.uint8)
    half_width = m.width / 2
    for end_face, top, band_material in (
        (_BODY_FRONT, m.belt_height - m.bonnet_drop, MATERIAL_HEADLAMP),
        (_BODY_REAR, m.belt_height - m.boot_drop, MATERIAL_TAIL_LAMP),
    ):
        lowest = m.clearance + (_FRONT_CHAMFER if end_face == _BODY_FRONT else _REAR_CHAMFER)[0]
        band = (face == end_face) & (y >= top - min(0.12, 0.45 * (top - lowest)))
        outer = np.abs(z) >= 0.5 * half_width
        material[band & outer] = band_material
        if end_face == _BODY_FRONT:
            material[band & (np.abs(z) <= 0.32 * half_width)] = MATERIAL_TRIM  # grille
    material[(face == _BODY_FRONT_CHAMFER) | (face == _BODY_REAR_CHAMFER)] = MATERIAL_TRIM
    return material


def _cabin_materials(m: CarModel, face: np.ndarray, points: list[np.ndarray]) -> np.ndarray:
    x, y, _ = points
    material = np.full(face.shape, MATERIAL_PAINT, np.uint8)
    material[(face == _CABIN_WINDSCREEN) | (face == _CABIN_REAR_WINDOW)] = MATERIAL_GLASS
    # Side windows: inside the side face's trapezoid, less the frame.
    windscreen_base = m.length / 2 - m.bonnet_length
    rear_window_base = -m.length / 2 + m.rear_deck_length
    rise = (y - m.belt_height) / m.cabin_height
    front_edge = windscreen_base - m.windscreen_run * rise
    rear_edge = rear_window_base + m.rear_window_run * rise
    window = (
        ((face == _CABIN_RIGHT) | (face == _CABIN_LEFT))
        & (y > m.belt_height + _SILL)
        & (y < m.roof_height - _HEADER)
        & (x < front_edge - _A_PILLAR)
        & (x > rear_edge + _C_PILLAR)
    )
    if m.roof_length >= _MIN_ROOF_FOR_B_PILLAR:
        roof_front = windscreen_base - m.windscreen_run
        b_pillar = roof_front - 0.45 * m.roof_length
        window &= np.abs(x - b_pillar) > _B_PILLAR / 2
    material[window] = MATERIAL_GLASS
    return material


def trace_view(model_index: int, elevation_index: int, azimuth_index: int) -> ViewSamples:
    """Ray casts one view of one model at SUPERSAMPLING^2 rays per pixel.

    Args:
      model_index: in [0, 183); elevation_index: in [0, 4); azimuth_index: in [0, 24).
    Returns:
      ViewSamples with [192, 192] materials and [192, 192, 3] normals.
    """
    scene = _scene(int(model_index))
    rays = _RayGrid(scene.centre, int(elevation_index), int(azimuth_index))
    depth = np.full((_SAMPLES, _SAMPLES), np.inf)
    material = np.zeros((_SAMPLES, _SAMPLES), np.uint8)
    normal = np.zeros((_SAMPLES, _SAMPLES, 3))

    def keep_nearer(t, rows, cols, part_material, part_normal) -> None:
        nearer = t < depth[rows, cols]
        depth[rows, cols] = np.where(nearer, t, depth[rows, cols])
        material[rows, cols] = np.where(nearer, part_material, material[rows, cols])
        normal[rows, cols] = np.where(nearer[..., None], part_normal, normal[rows, cols])

    for part, materials in ((scene.body, _body_materials), (scene.cabin, _cabin_materials)):
        t, face, rows, cols = _cast_convex(part, rays)
        points = rays.points(np.where(np.isfinite(t), t, 0.0), rows, cols)
        keep_nearer(t, rows, cols, materials(scene.model, face, points), part.normals[face])
    for wheel in scene.wheels:
        t, on_end_face, radial, rows, cols = _cast_wheel(wheel, rays)
        # The end face a ray enters is the one facing it; only the outer one,
        # facing away from the car (along +z on the right, -z on the left),
        # carries a hub.
        end_normal_z = -1.0 if rays.direction[2] > 0.0 else 1.0
        outer_face_seen = end_normal_z == (1.0 if wheel.z_high > 0.0 else -1.0)
        is_hub = on_end_face & (radial <= _HUB_FRACTION) & outer_face_seen
        wheel_material = np.where(is_hub, MATERIAL_HUB, MATERIAL_TYRE).astype(np.uint8)
        points = rays.points(np.where(np.isfinite(t), t, 0.0), rows, cols)
        end_normal = np.array([0.0, 0.0, end_normal_z])
        radial_normal = np.stack(
            [(points[0] - wheel.centre_x) / wheel.radius,
             (points[1] - wheel.radius) / wheel.radius,
             np.zeros_like(t)], -1,
        )
        wheel_normal = np.where(on_end_face[..., None], end_normal, radial_normal)
        keep_nearer(t, rows, cols, wheel_material, wheel_normal)
    return ViewSamples(material, normal, rays.towards, rays.right, rays.up)


def material_albedos(model_index: int) -> np.ndarray:
    """[NUM_MATERIALS, 3] RGB albedos in [0, 1] of one model; row 0 is the background."""
    m = car_models()[int(model_index)]
    rows = [np.array(BACKGROUND) / 255.0, m.paint, _GLASS, _TYRE, m.hub, _HEADLAMP,
            _TAIL_LAMP, _TRIM]
    return np.array(rows, np.float64)


def light_direction(samples: ViewSamples) -> np.ndarray:
    """[3] unit vector towards the key light in world coordinates, for one view."""
    right, up, towards = LIGHT_IN_CAMERA_FRAME
    light = right * samples.image_right + up * samples.image_up + towards * samples.towards_camera
    return light / np.sqrt(np.sum(light * light))


def render_view(model_index: int, elevation_index: int, azimuth_index: int) -> np.ndarray:
    """One image, ray cast and shaded: [64, 64, 3] uint8.

    Args:
      model_index: in [0, 183); elevation_index: in [0, 4); azimuth_index: in [0, 24).
    """
    samples = trace_view(model_index, elevation_index, azimuth_index)
    facing = _dot(samples.normal, light_direction(samples))
    shade = AMBIENT + (1.0 - AMBIENT) * np.maximum(facing, 0.0)
    shade[samples.material == MATERIAL_NONE] = 1.0
    albedos = material_albedos(model_index)
    pixels = np.empty((IMAGE_SIZE, IMAGE_SIZE, 3))
    # Box filter over each pixel's rays, summed in a fixed order; per channel and
    # by explicit adds because that is several times faster than a 5-d mean.
    for channel in range(3):
        colour = albedos[:, channel][samples.material] * shade
        rows = colour.reshape(IMAGE_SIZE, SUPERSAMPLING, _SAMPLES).sum(axis=1)
        pixels[..., channel] = rows.reshape(IMAGE_SIZE, IMAGE_SIZE, SUPERSAMPLING).sum(axis=2)
    return np.rint(pixels * (255.0 / SUPERSAMPLING**2)).astype(np.uint8)


# --------------------------------------------------------------------------- #
# Dataset
# --------------------------------------------------------------------------- #
class Cars3DSynth(FactorDataset):
    """Procedural stand-in for Cars3D with the official factors and ordering.

    Factors (values as the TFDS-backed `Cars3D` stores them): elevation 0-3 (camera
    ELEVATION_DEGREES above the horizon), azimuth 0, 15, ..., 345 degrees (0: front
    view, 90: left side), object 0-182 (the models of `car_models()`).
    Images are [64, 64, 3] uint8, ray cast on first request and then kept in
    memory (at most 216 MB); there is no random state.
    """

    name = "cars3d_synth"
    image_shape = (IMAGE_SIZE, IMAGE_SIZE, 3)
    factor_names = FACTOR_NAMES
    factor_sizes = FACTOR_SIZES

    def __init__(self) -> None:
        self.factor_values = (
            np.arange(NUM_ELEVATIONS, dtype=np.float64),
            np.arange(NUM_AZIMUTHS, dtype=np.float64) * AZIMUTH_STEP_DEGREES,
            np.arange(NUM_MODELS, dtype=np.float64),
        )
        super().__init__()
        self._images: np.ndarray | None = None  # allocated on first use
        self._rendered = np.zeros(self.num_images, bool)
        # Input pipelines render from background threads.
        self._lock = threading.Lock()

    def _images_at(self, index: np.ndarray) -> np.ndarray:
        with self._lock:
            if self._images is None:
                # np.zeros maps pages lazily: only images rendered take memory.
                self._images = np.zeros((self.num_images, *self.image_shape), np.uint8)
            missing = np.unique(index[~self._rendered[index]])
        # Rendered outside the lock so other threads' cached reads are not held
        # up; two threads rendering one image write the same bytes.
        factors = (missing[:, None] // self._strides) % np.array(self.factor_sizes)
        fresh = [render_view(model, elevation, azimuth) for elevation, azimuth, model in factors]
        with self._lock:
            if len(missing):
                self._images[missing] = np.stack(fresh)
                self._rendered[missing] = True
            return self._images[index]
