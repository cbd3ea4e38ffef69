//! Parameters sent as text (multipart fields, or JSON values as the text a
//! form would carry): one parser per kind, shared by every route.

use std::collections::HashMap;

use crate::ApiError;

/// A boolean parameter: `true` or `false` exactly; absent → `default`.
/// Anything else (`1`, `yes`, `{}`…) is 400 naming the parameter, never
/// taken for either value.
pub fn boolean(
    fields: &HashMap<String, String>,
    name: &str,
    default: bool,
) -> Result<bool, ApiError> {
    match fields.get(name).map(|v| v.trim()) {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(_) => Err(ApiError::invalid_parameter(name, "must be true or false")),
    }
}

/// `s` without the white space the document's `\\S` patterns mean (the
/// ECMAScript set, which JSON Schema's patterns use: U+FEFF is space, U+0085
/// is not), so that "not only spaces" is the same rule on both sides.
pub fn trim_spaces(s: &str) -> &str {
    s.trim_matches(|c: char| {
        matches!(
            c,
            '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202f}'
                    | '\u{205f}'
                    | '\u{3000}'
                    | '\u{feff}'
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_true_or_false_only() {
        let f = |v: &str| HashMap::from([("dryRun".to_owned(), v.to_owned())]);
        assert_eq!(boolean(&f("true"), "dryRun", false), Ok(true));
        assert_eq!(boolean(&f("false"), "dryRun", true), Ok(false));
        assert_eq!(boolean(&HashMap::new(), "dryRun", true), Ok(true));
        for bad in ["1", "yes", "{}", "[1]", "-5", "", "TRUE "] {
            let e = boolean(&f(bad), "dryRun", false).unwrap_err();
            assert_eq!(e.details["parameter"], "dryRun", "{bad}");
        }
    }
}
