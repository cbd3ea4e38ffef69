//! Whether a stated relation holds on drawn boxes, by a geometric rule per
//! relation, and why not when it does not. The result reports every
//! relation with `met`, so nothing the prompt asked is silently dropped.

use serde::Serialize;

use super::layout::{Canvas, Item};
use super::scene::{Relation, Scene, Stated};

/// A relation as reported: its words, whether the picture honours it, and
/// the reason when not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    pub subject: String,
    pub relation: Relation,
    pub objects: Vec<String>,
    pub met: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Horizontal overlap of two boxes, pixels (negative: the gap).
fn overlap_x(a: &Item, b: &Item) -> f32 {
    a.right().min(b.right()) - a.left().max(b.left())
}

fn overlap_y(a: &Item, b: &Item) -> f32 {
    a.bottom.min(b.bottom) - a.top().max(b.top())
}

/// The shortest distance between two boxes (0 when they touch).
fn distance(a: &Item, b: &Item) -> f32 {
    let dx = (-overlap_x(a, b)).max(0.0);
    let dy = (-overlap_y(a, b)).max(0.0);
    dx.hypot(dy)
}

/// One copy against one copy of the object (`a` drawn at `ia`, `b` at
/// `ib` in the drawing order).
fn pair(rel: Relation, a: &Item, ia: usize, b: &Item, ib: usize, c: &Canvas) -> bool {
    let tol = 2.0;
    match rel {
        // Here `a` is the worn thing, `b` the wearer.
        Relation::Wearing => {
            overlap_x(a, b) > 0.0
                && a.bottom >= b.top() - 0.05 * b.h
                && a.bottom <= b.top() + 0.5 * b.h
                && ia > ib
        }
        Relation::On => {
            a.bottom >= b.top() - tol
                && a.bottom <= b.top() + 0.35 * b.h
                && a.cx >= b.left()
                && a.cx <= b.right()
                && ia > ib
        }
        Relation::In => {
            a.left() >= b.left() - tol
                && a.right() <= b.right() + tol
                && a.top() >= b.top() - tol
                && a.bottom <= b.bottom + tol
                && ia > ib
        }
        Relation::Above => {
            a.cy() < b.cy() && a.bottom <= b.top() + 0.1 * b.h && overlap_x(a, b) > 0.0
        }
        Relation::Under => a.cy() > b.cy() && overlap_x(a, b) > 0.0,
        Relation::InFrontOf => overlap_x(a, b) > 0.0 && ia > ib && a.bottom >= b.bottom - 1.0,
        Relation::Behind => overlap_x(a, b) > 0.0 && ia < ib && a.bottom <= b.bottom + 1.0,
        Relation::NextTo => {
            let gap = -overlap_x(a, b);
            gap <= 0.15 * c.w && overlap_x(a, b) <= 0.35 * a.w.min(b.w) && overlap_y(a, b) > 0.0
        }
        Relation::LeftOf => a.cx < b.cx && a.right() <= b.left() + 0.15 * a.w.min(b.w),
        Relation::RightOf => a.cx > b.cx && a.left() >= b.right() - 0.15 * a.w.min(b.w),
        Relation::Near => distance(a, b) <= 0.15 * c.w,
        Relation::Far => distance(a, b) >= 0.25 * c.w,
        _ => false,
    }
}

/// Whether `s` holds on `items` (in drawing order).
pub fn holds(s: &Stated, scene: &Scene, items: &[Item], c: &Canvas) -> bool {
    let copies = |o: usize| copies(items, o);
    let subject = copies(s.subject);
    if subject.is_empty() {
        return false;
    }
    let xs = |list: &[(usize, &Item)]| list.iter().map(|(_, it)| it.cx).collect::<Vec<_>>();
    match (s.relation, s.objects.as_slice()) {
        (Relation::InBackground, []) => {
            let first_other = items
                .iter()
                .position(|it| it.object != s.subject && !is_sky(scene, it.object))
                .unwrap_or(usize::MAX);
            subject
                .iter()
                .all(|(i, it)| it.bottom <= c.ground - 0.04 * c.h && *i < first_other)
        }
        (Relation::InForeground, []) => {
            let last_other = items
                .iter()
                .rposition(|it| it.object != s.subject)
                .map_or(0, |p| p as i64);
            subject
                .iter()
                .all(|(i, it)| it.bottom >= c.ground - 1.0 && *i as i64 > last_other)
        }
        (Relation::OnLeft, []) => xs(&subject).iter().all(|&x| x < c.w / 3.0),
        (Relation::OnRight, []) => xs(&subject).iter().all(|&x| x > 2.0 * c.w / 3.0),
        (Relation::Between, [b, d]) => {
            let (bx, dx) = (xs(&copies(*b)), xs(&copies(*d)));
            let lo = bx.iter().chain(&dx).fold(f32::MAX, |m, &x| m.min(x));
            let hi = bx.iter().chain(&dx).fold(f32::MIN, |m, &x| m.max(x));
            let (bmid, dmid) = (mean(&bx), mean(&dx));
            lo < hi
                && xs(&subject)
                    .iter()
                    .all(|&x| x > bmid.min(dmid) && x < bmid.max(dmid))
        }
        (Relation::Around, [b]) => {
            let target = copies(*b);
            let Some(&(_, t)) = target.get(target.len() / 2) else {
                return false;
            };
            subject.len() >= 2
                && subject.iter().any(|(_, it)| it.cx < t.cx)
                && subject.iter().any(|(_, it)| it.cx > t.cx)
                && subject
                    .iter()
                    .all(|(_, it)| distance(it, t) <= 0.5 * t.w.max(t.h))
        }
        (Relation::Wearing, [worn]) => {
            let (worn, wearers) = (copies(*worn), subject);
            all_pairs(&worn, &wearers, s.each, Relation::Wearing, c)
        }
        (rel, [b]) => all_pairs(&subject, &copies(*b), s.each, rel, c),
        _ => false,
    }
}

/// An object's drawn copies with their places in the drawing order.
fn copies(items: &[Item], o: usize) -> Vec<(usize, &Item)> {
    items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.object == o)
        .collect()
}

/// Every copy of `a` against its own copy of `b` (`each`), or against
/// some copy of `b`.
fn all_pairs(
    a: &[(usize, &Item)],
    b: &[(usize, &Item)],
    each: bool,
    rel: Relation,
    c: &Canvas,
) -> bool {
    !b.is_empty()
        && a.iter().enumerate().all(|(k, (ia, it))| {
            if each {
                b.get(k)
                    .is_some_and(|(ib, other)| pair(rel, it, *ia, other, *ib, c))
            } else {
                b.iter()
                    .any(|(ib, other)| pair(rel, it, *ia, other, *ib, c))
            }
        })
}

fn mean(xs: &[f32]) -> f32 {
    xs.iter().sum::<f32>() / xs.len().max(1) as f32
}

fn is_sky(scene: &Scene, o: usize) -> bool {
    scene.objects[o].class.ground == super::classes::Ground::Sky
}

/// Every stated relation, checked on the drawn boxes; `conflicts` are the
/// ones the solver set aside for another.
pub fn report(scene: &Scene, items: &[Item], c: &Canvas, conflicts: &[usize]) -> Vec<Checked> {
    scene
        .relations
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let met = holds(s, scene, items, c);
            let word = |o: usize| scene.objects[o].word.clone();
            let reason = (!met).then(|| {
                if s.relation == Relation::Between && s.objects.len() < 2 {
                    "between needs two objects".to_owned()
                } else if s.relation == Relation::Around && scene.objects[s.subject].count < 2 {
                    format!(
                        "one {} cannot surround something: say how many",
                        word(s.subject)
                    )
                } else if conflicts.contains(&k) {
                    "it conflicts with another relation of the prompt".to_owned()
                } else {
                    "there was no room on the canvas to place it".to_owned()
                }
            });
            Checked {
                subject: word(s.subject),
                relation: s.relation,
                objects: s.objects.iter().map(|&o| word(o)).collect(),
                met,
                reason,
            }
        })
        .collect()
}
