//! Typed access to one TOML table that reports what it cannot use. Every
//! getter records a problem for a wrong type and returns `None`, so callers
//! keep going and validation stays complete.

use toml::{Table, Value};

use super::problems::{Problems, join, type_name};

/// A table and its dotted path in the manifest (`""` at the top level).
pub(crate) struct Fields<'a> {
    pub table: &'a Table,
    pub path: String,
}

impl<'a> Fields<'a> {
    pub fn new(table: &'a Table, path: impl Into<String>) -> Self {
        Self {
            table,
            path: path.into(),
        }
    }

    /// The dotted path of `key` in this table.
    pub fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    /// Reports a missing required key; `example` is a whole line to copy.
    pub fn require(&self, key: &str, example: &str, p: &mut Problems) -> Option<&'a Value> {
        let value = self.get(key);
        if value.is_none() {
            p.push(
                self.path(key),
                format!("required but missing; write e.g. {example}"),
            );
        }
        value
    }

    pub fn string(&self, key: &str, example: &str, p: &mut Problems) -> Option<&'a str> {
        self.get(key)
            .and_then(|v| as_str(v, &self.path(key), example, p))
    }

    pub fn required_string(&self, key: &str, example: &str, p: &mut Problems) -> Option<&'a str> {
        self.require(key, example, p)
            .and_then(|v| as_str(v, &self.path(key), example, p))
    }

    pub fn integer(&self, key: &str, example: &str, p: &mut Problems) -> Option<i64> {
        let value = self.get(key)?;
        let found = value.as_integer();
        if found.is_none() {
            wrong_type(value, "an integer", &self.path(key), example, p);
        }
        found
    }

    pub fn boolean(&self, key: &str, example: &str, p: &mut Problems) -> Option<bool> {
        let value = self.get(key)?;
        let found = value.as_bool();
        if found.is_none() {
            wrong_type(
                value,
                "a boolean (true or false)",
                &self.path(key),
                example,
                p,
            );
        }
        found
    }

    pub fn array(&self, key: &str, example: &str, p: &mut Problems) -> Option<&'a [Value]> {
        let value = self.get(key)?;
        let found = value.as_array().map(Vec::as_slice);
        if found.is_none() {
            wrong_type(value, "an array", &self.path(key), example, p);
        }
        found
    }

    pub fn table(&self, key: &str, example: &str, p: &mut Problems) -> Option<&'a Table> {
        self.get(key)
            .and_then(|v| as_table(v, &self.path(key), example, p))
    }

    /// Reports every key not in `known`, sorted so output does not depend on
    /// the map's iteration order.
    pub fn unknown_keys(&self, known: &[&str], p: &mut Problems) {
        for key in self.unknown(known) {
            p.push(self.path(key), unknown_key_message(key, known));
        }
    }

    /// Keys not in `known`, sorted.
    pub fn unknown(&self, known: &[&str]) -> Vec<&'a str> {
        let mut keys: Vec<&str> = self
            .table
            .keys()
            .map(String::as_str)
            .filter(|k| !known.contains(k))
            .collect();
        keys.sort_unstable();
        keys
    }
}

pub fn as_str<'v>(
    value: &'v Value,
    field: &str,
    example: &str,
    p: &mut Problems,
) -> Option<&'v str> {
    let found = value.as_str();
    if found.is_none() {
        wrong_type(value, "a string", field, example, p);
    }
    found
}

pub fn as_table<'v>(
    value: &'v Value,
    field: &str,
    example: &str,
    p: &mut Problems,
) -> Option<&'v Table> {
    let found = value.as_table();
    if found.is_none() {
        wrong_type(value, "a table", field, example, p);
    }
    found
}

fn wrong_type(value: &Value, expected: &str, field: &str, example: &str, p: &mut Problems) {
    p.push(
        field,
        format!(
            "expected {expected}, found {}; write e.g. {example}",
            type_name(value)
        ),
    );
}

/// "unknown key" with the closest known key when it looks like a typo.
pub fn unknown_key_message(key: &str, known: &[&str]) -> String {
    let list = known.join(", ");
    match closest(key, known) {
        Some(near) => {
            format!("unknown key; did you mean `{near}`? The known keys here are: {list}")
        }
        None => format!("unknown key; remove it or use one of the known keys here: {list}"),
    }
}

/// The known key within a small edit distance, comparing case- and
/// `_`/`-`-insensitively because those are the usual slips.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    const MAX_KEY: usize = 64;
    if key.len() > MAX_KEY {
        return None;
    }
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .map(|c| {
                if c == '_' {
                    '-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    };
    let key = norm(key);
    known
        .iter()
        .map(|k| (distance(&key, &norm(k)), *k))
        .filter(|(d, k)| *d <= 2 && *d < k.len() / 2 + 1)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance; inputs are short (capped above).
fn distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if ca == cb {
                prev
            } else {
                1 + prev.min(row[j]).min(here)
            };
            prev = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_keys_only() {
        let known = ["id", "name", "version", "memory-mib"];
        assert_eq!(closest("verison", &known), Some("version"));
        assert_eq!(closest("memory_mib", &known), Some("memory-mib"));
        assert_eq!(closest("Name", &known), Some("name"));
        assert_eq!(closest("__proto__", &known), None);
        assert_eq!(closest("xy", &known), None);
    }
}
