//! Where each object goes: every stated relation becomes a constraint on
//! the boxes, and all of a prompt's constraints are solved together.
//!
//! - Relations that attach an object to another (wearing, on, in, above,
//!   under, in front of, behind, around) make a tree: each object hangs on
//!   at most one other, and a tree moves as one cluster.
//! - Objects nothing attaches rest by their class ([`super::classes`]):
//!   standing ones on the ground line, flying ones in the air, the sky's
//!   high up. Sizes follow real-world sizes (their square root, so that a
//!   cat next to a house is still seen) and size words.
//! - Clusters are put side by side in the order that breaks the fewest
//!   side-by-side relations (left of, right of, between, next to, near,
//!   far, on the left/right): every order is tried for up to seven
//!   clusters.
//! - When something does not fit, everything is made smaller and solved
//!   again; the layout that honours the most relations wins. Whatever is
//!   still unmet is reported by [`super::check`].

use super::classes::Ground;
use super::scene::{Relation, Scene};

/// The canvas and its lines, pixels.
#[derive(Debug, Clone, Copy)]
pub struct Canvas {
    pub w: f32,
    pub h: f32,
    /// Where standing objects' feet go.
    pub ground: f32,
    /// The ground line of the far distance (for "in the background").
    pub far: f32,
}

/// An icon's drawing inside its square: the opaque box and the head (the
/// top middle of the silhouette), as fractions of the square.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub x0: f32,
    pub y0: f32,
    pub x1: f32,
    pub y1: f32,
    pub head: (f32, f32),
}

/// One drawn copy of an object: its opaque box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item {
    pub object: usize,
    pub copy: usize,
    pub cx: f32,
    pub bottom: f32,
    pub w: f32,
    pub h: f32,
}

impl Item {
    pub fn left(&self) -> f32 {
        self.cx - self.w / 2.0
    }
    pub fn right(&self) -> f32 {
        self.cx + self.w / 2.0
    }
    pub fn top(&self) -> f32 {
        self.bottom - self.h
    }
    pub fn cy(&self) -> f32 {
        self.bottom - self.h / 2.0
    }
}

/// How an attached object sits against what it hangs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Worn,
    On,
    In,
    Above,
    /// Under a standing object: on the ground beneath it.
    Beneath,
    /// Above the object it was said to be under ("a dog under a lamp").
    Hover,
    Front,
    Back,
    Around,
}

/// What an object hangs on: the relation's index, the mode, the parent.
type Link = (usize, Mode, usize);

/// A solved layout: items in drawing order (back to front), and the
/// relations the solver had to set aside for another.
#[derive(Debug, Clone)]
pub struct Plan {
    pub items: Vec<Item>,
    pub conflicts: Vec<usize>,
    /// The clusters' widths over the canvas's (above 1: they overlap).
    pub fill: f32,
}

/// Shrink factors tried in turn.
const FACTORS: [f32; 7] = [1.0, 0.85, 0.72, 0.6, 0.5, 0.4, 0.32];

/// Solves the scene; `met` counts the relations a plan honours.
pub fn solve(
    scene: &Scene,
    shapes: &[Shape],
    canvas: Canvas,
    met: impl Fn(&Plan) -> usize,
) -> Plan {
    let mut best: Option<((usize, bool), Plan)> = None;
    for factor in FACTORS {
        let mut plan = attempt(scene, shapes, canvas, factor);
        // Too wide: smaller by as much as it overflows.
        if plan.fill > 1.0 {
            plan = attempt(scene, shapes, canvas, factor / plan.fill * 0.97);
        }
        let score = (met(&plan), plan.fill <= 1.0);
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            let done = score == (scene.relations.len(), true);
            best = Some((score, plan));
            if done {
                break;
            }
        }
    }
    best.map(|(_, p)| p).unwrap_or(Plan {
        items: Vec::new(),
        conflicts: Vec::new(),
        fill: 0.0,
    })
}

/// The attachment tree: each object's link, and the relations that could
/// not attach (their object already hangs on another, or it would close a
/// loop).
fn links(scene: &Scene) -> (Vec<Option<Link>>, Vec<usize>) {
    let n = scene.objects.len();
    let mut link: Vec<Option<Link>> = vec![None; n];
    let mut conflicts = Vec::new();
    let reaches = |link: &[Option<Link>], from: usize, to: usize| {
        let (mut at, mut steps) = (from, 0);
        loop {
            if at == to {
                return true;
            }
            match link[at] {
                Some((_, _, p)) if steps <= n => (at, steps) = (p, steps + 1),
                _ => return false,
            }
        }
    };
    for (k, s) in scene.relations.iter().enumerate() {
        if !s.relation.attaches() || s.objects.len() != 1 {
            continue;
        }
        let (a, b) = (s.subject, s.objects[0]);
        let (child, parent, mode) = match s.relation {
            Relation::Wearing => (b, a, Mode::Worn),
            Relation::On => (a, b, Mode::On),
            Relation::In => (a, b, Mode::In),
            Relation::Above => (a, b, Mode::Above),
            Relation::InFrontOf => (a, b, Mode::Front),
            Relation::Behind => (a, b, Mode::Back),
            Relation::Around => (a, b, Mode::Around),
            // Under something that does not stand: that thing goes above.
            _ if scene.objects[b].class.ground != Ground::Stands && link[b].is_none() => {
                (b, a, Mode::Hover)
            }
            _ => (a, b, Mode::Beneath),
        };
        if a == b {
            conflicts.push(k);
        } else if link[child].is_none() && !reaches(&link, parent, child) {
            link[child] = Some((k, mode, parent));
        } else {
            conflicts.push(k);
        }
    }
    (link, conflicts)
}

/// Parents before children.
fn topological(link: &[Option<Link>]) -> Vec<usize> {
    let n = link.len();
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    while order.len() < n {
        let before = order.len();
        for i in 0..n {
            if !done[i] && link[i].is_none_or(|(_, _, p)| done[p]) {
                done[i] = true;
                order.push(i);
            }
        }
        if order.len() == before {
            break;
        }
    }
    order
}

fn place_of(scene: &Scene, i: usize) -> Option<Relation> {
    scene
        .relations
        .iter()
        .find(|s| {
            s.subject == i && matches!(s.relation, Relation::InBackground | Relation::InForeground)
        })
        .map(|s| s.relation)
}

/// Box width and height for a largest side of `d` pixels.
fn dims(shape: &Shape, d: f32) -> (f32, f32) {
    let (fw, fh) = (
        (shape.x1 - shape.x0).max(0.01),
        (shape.y1 - shape.y0).max(0.01),
    );
    if fw >= fh {
        (d, d * fh / fw)
    } else {
        (d * fw / fh, d)
    }
}

fn attempt(scene: &Scene, shapes: &[Shape], c: Canvas, factor: f32) -> Plan {
    let n = scene.objects.len();
    let m = c.w.min(c.h);
    let (link, mut conflicts) = links(scene);
    let order = topological(&link);
    // Apparent sizes: real size's square root, size words, depth.
    let depth = |i: usize| match place_of(scene, i) {
        Some(Relation::InBackground) => 0.6,
        Some(Relation::InForeground) => 1.25,
        _ => 1.0,
    };
    let apparent: Vec<f32> = (0..n)
        .map(|i| {
            let o = &scene.objects[i];
            o.class.metres.sqrt() * o.scale * depth(i)
        })
        .collect();
    let largest = (0..n)
        .filter(|&i| scene.objects[i].class.ground != Ground::Sky)
        .map(|i| apparent[i])
        .fold(0.0f32, f32::max)
        .max(0.1);
    let k = factor * 0.55 * m / largest;
    // Items per object, filled parents first.
    let mut items: Vec<Vec<Item>> = vec![Vec::new(); n];
    for &i in &order {
        let o = &scene.objects[i];
        let shape = &shapes[i];
        let mut d = if o.class.ground == Ground::Sky {
            factor * m * 0.12 * (o.class.metres / 3.0).sqrt() * o.scale
        } else {
            (k * apparent[i]).max(0.045 * m)
        };
        let Some((_, mode, p)) = link[i] else {
            items[i] = root_items(o.count, i, shape, d, depth(i), scene, c, factor);
            continue;
        };
        let parents = items[p].clone();
        let Some(&mid) = parents.get(parents.len() / 2) else {
            continue;
        };
        // Sizes bounded by what the object hangs on.
        match mode {
            Mode::Worn => d = 0.5 * mid.w * o.scale,
            Mode::In => {
                let fit = (0.55 * mid.w.min(mid.h)).min(0.8 * mid.w / o.count as f32);
                d = d.min(fit);
            }
            Mode::Beneath if o.class.ground == Ground::Stands => d = d.min(0.65 * mid.h),
            Mode::On => d = d.min(0.9 * mid.w),
            Mode::Back => d *= 0.85,
            _ => {}
        }
        let (w, h) = dims(shape, d);
        let each = parents.len() == o.count && o.count > 1;
        let mut list = Vec::with_capacity(o.count);
        for copy in 0..o.count {
            let parent = parents.get(copy).filter(|_| each).copied().unwrap_or(mid);
            // Copies of one child share their parent's width.
            let spread = if each || o.count == 1 {
                0.0
            } else {
                let span = match mode {
                    Mode::On | Mode::In => parent.w * 0.8 - w,
                    // A flock spreads over what it is above.
                    Mode::Above | Mode::Hover => (parent.w * 0.9).max(o.count as f32 * w * 1.1) - w,
                    _ => (parent.w + w * 0.6).min(o.count as f32 * w * 1.1) - w,
                };
                span.max(0.0) * (copy as f32 / (o.count - 1) as f32 - 0.5)
            };
            let side = if copy % 2 == 0 { 1.0 } else { -1.0 };
            let mut it = Item {
                object: i,
                copy,
                cx: parent.cx + spread,
                bottom: parent.bottom,
                w,
                h,
            };
            match mode {
                Mode::Worn => {
                    let s = &shapes[p];
                    let square = parent.h / (s.y1 - s.y0).max(0.01);
                    let left = parent.left() - s.x0 * square;
                    let top = parent.top() - s.y0 * square;
                    it.cx = left + s.head.0 * square;
                    it.bottom = top + s.head.1 * square + h * 0.35;
                }
                Mode::On => it.bottom = parent.top() + 0.1 * parent.h,
                Mode::In => {
                    it.bottom = (parent.cy() + 0.1 * parent.h + h / 2.0)
                        .min(parent.bottom - 0.04 * parent.h)
                        .max(parent.top() + h);
                }
                Mode::Above | Mode::Hover => {
                    it.bottom = parent.top() - 0.03 * c.h;
                    // A hanging thing hangs from the top when there is room.
                    if o.class.ground == Ground::Hangs && h < it.bottom {
                        it.bottom = h;
                    }
                }
                Mode::Beneath => {
                    if o.class.ground == Ground::Stands {
                        let standing = scene.objects[p].class.ground == Ground::Stands;
                        it.bottom = if standing { parent.bottom } else { c.ground };
                        it.cx += 0.18 * parent.w * side * f32::from(u8::from(o.count == 1));
                    } else {
                        it.bottom = parent.top() + 0.7 * parent.h + h / 2.0;
                    }
                }
                Mode::Front => {
                    it.bottom = (parent.bottom + 0.05 * c.h).min(c.h - 1.0);
                    it.cx = parent.cx + 0.3 * parent.w * side;
                }
                Mode::Back => {
                    it.bottom = parent.bottom - 0.05 * c.h;
                    it.cx = parent.cx - 0.3 * parent.w * side;
                }
                Mode::Around => {
                    let gap = 0.02 * m;
                    if o.class.ground == Ground::Stands {
                        // Left and right of it, then in front of it.
                        let out = parent.w / 2.0 + gap + w / 2.0;
                        it.cx = parent.cx - side * out;
                        if copy >= 2 {
                            let ring = (copy / 2) as f32;
                            it.cx = parent.cx + side * parent.w * 0.3 / ring;
                            it.bottom = (parent.bottom + 0.05 * c.h * ring).min(c.h);
                        }
                    } else {
                        let theta =
                            std::f32::consts::PI * (1.0 - (copy as f32 + 0.5) / o.count as f32);
                        let (rx, ry) = (
                            parent.w / 2.0 + w / 2.0 + gap,
                            parent.h / 2.0 + h / 2.0 + gap,
                        );
                        it.cx = parent.cx + rx * theta.cos();
                        it.bottom = parent.cy() - ry * theta.sin() + h / 2.0;
                    }
                }
            }
            list.push(it);
        }
        items[i] = list;
    }
    // Clusters: each root with everything hanging on it.
    let root = |mut i: usize| {
        let mut steps = 0;
        while let Some((_, _, p)) = link[i] {
            i = p;
            steps += 1;
            if steps > n {
                break;
            }
        }
        i
    };
    let roots: Vec<usize> = (0..n).filter(|&i| link[i].is_none()).collect();
    let cluster_of: Vec<usize> = (0..n)
        .map(|i| roots.iter().position(|&r| r == root(i)).unwrap_or(0))
        .collect();
    let extents: Vec<(f32, f32)> = (0..roots.len())
        .map(|ci| {
            items
                .iter()
                .enumerate()
                .filter(|(i, _)| cluster_of[*i] == ci)
                .flat_map(|(_, l)| l.iter())
                .fold((f32::MAX, f32::MIN), |(l, r), it| {
                    (l.min(it.left()), r.max(it.right()))
                })
        })
        .map(|(l, r)| if l > r { (0.0, 0.0) } else { (l, r) })
        .collect();
    let (sequence, broken) = arrange(scene, &cluster_of, roots.len());
    conflicts.extend(broken);
    // Gaps: small between neighbours said to be next to or near each
    // other, wide between far ones.
    let widths: f32 = extents.iter().map(|(l, r)| r - l).sum();
    let margin = 0.02 * c.w;
    let room = c.w - 2.0 * margin;
    let free = (room - widths).max(0.0);
    let mut weights = vec![0.5f32];
    for pair in sequence.windows(2) {
        let mut wgt = 1.0;
        for s in &scene.relations {
            let Some(&o) = s.objects.first() else {
                continue;
            };
            let (a, b) = (cluster_of[s.subject], cluster_of[o]);
            if (a, b) == (pair[0], pair[1]) || (b, a) == (pair[0], pair[1]) {
                match s.relation {
                    Relation::NextTo | Relation::Near => wgt = 0.15,
                    Relation::Far => wgt = 6.0,
                    _ => {}
                }
            }
        }
        weights.push(wgt);
    }
    weights.push(0.5);
    let total: f32 = weights.iter().sum();
    let mut x = margin;
    let mut shift = vec![0.0f32; roots.len()];
    for (k, &ci) in sequence.iter().enumerate() {
        x += free * weights[k] / total;
        let (l, r) = extents[ci];
        shift[ci] = x - l;
        x += r - l;
    }
    let mut all: Vec<Item> = Vec::new();
    for (i, list) in items.iter().enumerate() {
        for it in list {
            let mut it = *it;
            it.cx += shift[cluster_of[i]];
            it.cx = it.cx.clamp(it.w / 2.0, (c.w - it.w / 2.0).max(it.w / 2.0));
            it.bottom = it.bottom.clamp(it.h.min(c.h), c.h);
            all.push(it);
        }
    }
    Plan {
        items: drawing_order(scene, &link, all),
        conflicts,
        fill: widths / room,
    }
}

/// A root's copies: a row on its line (two rows past six copies, the back
/// one higher).
#[allow(clippy::too_many_arguments)]
fn root_items(
    count: usize,
    object: usize,
    shape: &Shape,
    d: f32,
    depth: f32,
    scene: &Scene,
    c: Canvas,
    factor: f32,
) -> Vec<Item> {
    let o = &scene.objects[object];
    let (w, h) = dims(shape, d);
    let rows = if count > 6 { 2 } else { 1 };
    let per_row = count.div_ceil(rows);
    let step = w * 1.08;
    (0..count)
        .map(|copy| {
            let (row, col) = (copy / per_row, copy % per_row);
            let in_row = if row + 1 == rows {
                count - row * per_row
            } else {
                per_row
            };
            let cx = (col as f32 - (in_row as f32 - 1.0) / 2.0) * step
                + if row == 1 { step / 2.0 } else { 0.0 };
            let line = if depth < 1.0 {
                c.far
            } else if depth > 1.0 {
                (c.ground + 0.07 * c.h).min(c.h - 2.0)
            } else {
                c.ground
            };
            let wave = if copy % 2 == 0 { 0.0 } else { 0.05 * c.h };
            let bottom = match o.class.ground {
                Ground::Stands => line - row as f32 * 0.06 * c.h,
                Ground::Flies => c.h * 0.42 * factor.sqrt() - wave,
                Ground::Hangs => 0.03 * c.h + h,
                Ground::Sky => 0.05 * c.h + h + wave * 0.5,
            };
            Item {
                object,
                copy,
                cx,
                bottom,
                w,
                h,
            }
        })
        .collect()
}

/// The order of the clusters from left to right that breaks the fewest
/// side-by-side relations, and the relations it breaks.
fn arrange(scene: &Scene, cluster_of: &[usize], clusters: usize) -> (Vec<usize>, Vec<usize>) {
    let identity: Vec<usize> = (0..clusters).collect();
    let cost = |seq: &[usize], broken: &mut Vec<usize>| {
        let mut pos = vec![0usize; clusters];
        for (p, &ci) in seq.iter().enumerate() {
            pos[ci] = p;
        }
        let mut total = 0.0f32;
        for (k, s) in scene.relations.iter().enumerate() {
            let a = pos[cluster_of[s.subject]] as f32;
            let at = |j: usize| s.objects.get(j).map(|&o| pos[cluster_of[o]] as f32);
            let last = (clusters - 1) as f32;
            let penalty = match (s.relation, at(0), at(1)) {
                (Relation::LeftOf, Some(b), _) if a >= b => 100.0,
                (Relation::RightOf, Some(b), _) if a <= b => 100.0,
                (Relation::Between, Some(b), Some(c)) if !(a > b.min(c) && a < b.max(c)) => 100.0,
                (Relation::NextTo | Relation::Near, Some(b), _) if (a - b).abs() > 1.0 => {
                    10.0 * ((a - b).abs() - 1.0)
                }
                (Relation::Far, Some(b), _) => 5.0 * (last - (a - b).abs()),
                (Relation::OnLeft, _, _) => 50.0 * a,
                (Relation::OnRight, _, _) => 50.0 * (last - a),
                _ => 0.0,
            };
            if penalty >= 50.0 && !s.relation.attaches() {
                broken.push(k);
            }
            total += penalty;
        }
        // Otherwise, the order of the prompt.
        total
            + seq
                .iter()
                .enumerate()
                .map(|(p, &ci)| 0.01 * (p as f32 - ci as f32).abs())
                .sum::<f32>()
    };
    if clusters > 7 {
        let mut broken = Vec::new();
        cost(&identity, &mut broken);
        return (identity, broken);
    }
    let mut best = (f32::MAX, identity.clone());
    let mut seq = identity;
    permutations(&mut seq, 0, &mut |s| {
        let c = cost(s, &mut Vec::new());
        if c < best.0 {
            best = (c, s.to_vec());
        }
    });
    let mut broken = Vec::new();
    cost(&best.1, &mut broken);
    (best.1, broken)
}

fn permutations(seq: &mut Vec<usize>, k: usize, visit: &mut impl FnMut(&[usize])) {
    if k == seq.len() {
        visit(seq);
        return;
    }
    for j in k..seq.len() {
        seq.swap(k, j);
        permutations(seq, k + 1, visit);
        seq.swap(k, j);
    }
}

/// Back to front: the sky, the background, then by how near the feet
/// are, with what is on, in, worn by or in front of something after it
/// (and what is behind before it), the foreground last.
fn drawing_order(scene: &Scene, link: &[Option<Link>], items: Vec<Item>) -> Vec<Item> {
    let n = scene.objects.len();
    // An object is drawn after these.
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, l) in link.iter().enumerate() {
        match l {
            Some((_, Mode::Back, p)) => after[*p].push(i),
            Some((_, Mode::Worn | Mode::On | Mode::In | Mode::Front | Mode::Beneath, p)) => {
                after[i].push(*p)
            }
            _ => {}
        }
    }
    let layer = |i: usize| -> i32 {
        let mut at = i;
        for _ in 0..=n {
            if let Some(place) = place_of(scene, at) {
                return if place == Relation::InBackground {
                    1
                } else {
                    4
                };
            }
            match link[at] {
                Some((_, _, p)) => at = p,
                None => break,
            }
        }
        match scene.objects[i].class.ground {
            Ground::Sky => 0,
            Ground::Stands => 2,
            // In the air, in front of what stands.
            Ground::Flies | Ground::Hangs => 3,
        }
    };
    let mut out = Vec::with_capacity(items.len());
    let mut drawn = vec![false; n];
    let mut left: Vec<usize> = (0..n).collect();
    while !left.is_empty() {
        let ready: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&i| after[i].iter().all(|&p| drawn[p]))
            .collect();
        let pool = if ready.is_empty() {
            left.clone()
        } else {
            ready
        };
        let key = |i: usize| {
            let bottom = items
                .iter()
                .filter(|it| it.object == i)
                .map(|it| it.bottom)
                .fold(0.0f32, f32::max);
            (layer(i), (bottom * 16.0) as i64)
        };
        let Some(&next) = pool.iter().min_by_key(|&&i| key(i)) else {
            break;
        };
        drawn[next] = true;
        left.retain(|&i| i != next);
        out.extend(items.iter().filter(|it| it.object == next));
    }
    out
}
