//! Closed sets of names (kinds, stages, policies...) share one shape: a
//! fixed text per variant, `ALL` in a meaningful order, parsing that lists
//! the valid names on failure, and serde as the same text. The macro keeps
//! the text in exactly one place per variant.

use super::problems::quote;

/// A name outside a closed set; its message lists every valid name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {}; write one of: {}", quote(.value), .expected.join(", "))]
pub struct UnknownName {
    /// What was being named, e.g. `kind`.
    pub what: &'static str,
    pub value: String,
    pub expected: &'static [&'static str],
}

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

            /// The manifest text of this variant.
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
            type Err = $crate::manifest::text_enum::UnknownName;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err($crate::manifest::text_enum::UnknownName {
                        what: $what,
                        value: s.to_string(),
                        expected: $name::NAMES,
                    }),
                }
            }
        }
    };
}

pub(crate) use text_enum;
