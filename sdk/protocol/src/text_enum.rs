//! Closed sets of names (kinds, stages, levels, decisions...) share one
//! shape: a fixed text per variant, `ALL` in a meaningful order, parsing
//! that lists the valid names on failure, and serde as the same text. The
//! macro keeps the text in exactly one place per variant; the manifest's
//! names and the words events carry both use it.

/// How much of a bad value an error message shows.
pub const QUOTE_LIMIT: usize = 60;

/// `text` in double quotes with control characters escaped and at most
/// [`QUOTE_LIMIT`] characters kept: safe to show in any message.
pub fn quote(text: &str) -> String {
    let mut out = String::from('"');
    let mut chars = text.chars();
    for c in chars.by_ref().take(QUOTE_LIMIT) {
        out.extend(c.escape_debug());
    }
    if chars.next().is_some() {
        out.push('…');
    }
    out.push('"');
    out
}

/// A name outside a closed set; its message lists every valid name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What was being named, e.g. `kind`.
    pub what: &'static str,
    pub value: String,
    pub expected: &'static [&'static str],
}

impl std::fmt::Display for UnknownName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown {} {}; write one of: {}",
            self.what,
            quote(&self.value),
            self.expected.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// A closed set of names: `pub enum Name("what it names") { Variant =
/// "text", ... }`. The calling crate needs `serde` (with `derive`).
#[macro_export]
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];
            /// The text of every variant, same order as `ALL`.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The text of this variant.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::text_enum::UnknownName;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err($crate::text_enum::UnknownName {
                        what: $what,
                        value: s.to_string(),
                        expected: $name::NAMES,
                    }),
                }
            }
        }
    };
}
