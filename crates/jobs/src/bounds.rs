//! A request's bounds are written once, in its schema (`#[schema(max_length
//! = …, maximum = …)]` on the member, which utoipa takes only as literals):
//! the checks that refuse a value out of bounds read them back from the
//! type's schema, so the document and the checks cannot say two things.
//! A type's schema is built once per member asked (then kept: the checks
//! run on every request); the unit tests read every bound a check reads
//! (a member left without its bound fails them).

use std::any::TypeId;
use std::sync::Mutex;

use utoipa::openapi::schema::{Object, Schema};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

/// What one member's schema bounds it to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub min_length: Option<usize>,
    pub max_length: Option<usize>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub multiple_of: Option<f64>,
}

impl Bound {
    /// The bounds of `member` (its name in the document) in `T`'s schema,
    /// looked for in the type's own members and in those it flattens.
    ///
    /// # Panics
    /// When `T` has no such member: the caller names a member of its own
    /// type, and the unit tests read each bound.
    pub fn of<T: ToSchema + 'static>(member: &'static str) -> Self {
        static READ: Mutex<Vec<((TypeId, &str), Bound)>> = Mutex::new(Vec::new());
        let at = (TypeId::of::<T>(), member);
        let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, b)) = read.iter().find(|(k, _)| *k == at) {
            return *b;
        }
        let b = find(&T::schema(), member)
            .unwrap_or_else(|| panic!("{} has no member {member}", T::name()));
        read.push((at, b));
        b
    }

    /// The most characters (`maxLength`).
    pub fn max_length(self) -> usize {
        self.max_length.expect("the member states maxLength")
    }

    /// The least value (`minimum`).
    pub fn minimum(self) -> f64 {
        self.minimum.expect("the member states minimum")
    }

    /// The greatest value (`maximum`).
    pub fn maximum(self) -> f64 {
        self.maximum.expect("the member states maximum")
    }

    /// `maximum` as a count (a whole, non-negative bound).
    pub fn max_count(self) -> u32 {
        whole(self.maximum())
    }

    /// `minimum` as a count.
    pub fn min_count(self) -> u32 {
        whole(self.minimum())
    }

    /// Whether the count `n` is within `minimum..=maximum` and a
    /// multiple of `multipleOf` where the member states one.
    pub fn counts(self, n: u32) -> bool {
        (self.min_count()..=self.max_count()).contains(&n)
            && self.multiple_of.is_none_or(|m| n.is_multiple_of(whole(m)))
    }
}

fn whole(v: f64) -> u32 {
    assert!(
        v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX),
        "{v} is not a count"
    );
    v as u32
}

fn find(schema: &RefOr<Schema>, member: &str) -> Option<Bound> {
    match schema {
        RefOr::T(Schema::Object(o)) => match o.properties.get(member)? {
            RefOr::T(Schema::Object(p)) => Some(bound(p)),
            _ => None,
        },
        RefOr::T(Schema::AllOf(all)) => all.items.iter().find_map(|s| find(s, member)),
        _ => None,
    }
}

fn bound(o: &Object) -> Bound {
    let number = |n: &Option<utoipa::Number>| {
        n.as_ref().map(|n| match n {
            utoipa::Number::Int(i) => *i as f64,
            utoipa::Number::UInt(u) => *u as f64,
            utoipa::Number::Float(f) => *f,
        })
    };
    Bound {
        min_length: o.min_length,
        max_length: o.max_length,
        minimum: number(&o.minimum),
        maximum: number(&o.maximum),
        multiple_of: number(&o.multiple_of),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, utoipa::ToSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Probe {
        #[schema(min_length = 1, max_length = 12)]
        some_text: Option<String>,
        #[schema(minimum = 0.5, maximum = 2.5)]
        speed: f32,
        #[schema(minimum = 8, maximum = 64, multiple_of = 8)]
        side: u32,
        #[serde(flatten)]
        #[schema(inline)]
        job: mediagen_core::JobFields,
    }

    #[test]
    fn a_members_bounds_are_read_from_its_schema() {
        let text = Bound::of::<Probe>("someText");
        assert_eq!((text.min_length, text.max_length), (Some(1), Some(12)));
        assert_eq!(text.minimum, None);
        let speed = Bound::of::<Probe>("speed");
        assert_eq!((speed.minimum(), speed.maximum()), (0.5, 2.5));
        let side = Bound::of::<Probe>("side");
        assert!(side.counts(8) && side.counts(64) && side.counts(16));
        assert!(!side.counts(0) && !side.counts(12) && !side.counts(72));
        // A flattened member is found too (it has no bound).
        assert_eq!(Bound::of::<Probe>("dryRun").max_length, None);
    }

    #[test]
    #[should_panic(expected = "has no member")]
    fn a_member_the_schema_lacks_is_the_codes_error() {
        Bound::of::<Probe>("some_text");
    }

    #[test]
    #[should_panic(expected = "is not a count")]
    fn a_fractional_count_is_refused() {
        Bound::of::<Probe>("speed").max_count();
    }
}
