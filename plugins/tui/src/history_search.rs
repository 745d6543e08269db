//! Ctrl-R: search what the person typed before (this project's history,
//! earlier sessions included), newest first, as a shell's
//! reverse-i-search does. The match stands in the input box; Enter keeps
//! it there to be sent or changed, Esc puts back what was typed before.

/// An open search.
pub struct Search {
    pub query: String,
    /// The history index of the match shown.
    pub at: Option<usize>,
    /// The input before the search, put back when it is left with Esc.
    pub before: String,
}

impl Search {
    pub fn new(before: String) -> Self {
        Search {
            query: String::new(),
            at: None,
            before,
        }
    }

    /// The newest entry holding the query that is older than `below`.
    pub fn find<'h>(&mut self, history: &'h [String], below: usize) -> Option<&'h str> {
        let query = self.query.to_lowercase();
        let end = below.min(history.len());
        self.at = history[..end]
            .iter()
            .rposition(|h| h.to_lowercase().contains(&query));
        self.at.map(|i| history[i].as_str())
    }

    /// What the input box's frame says while the search is open.
    pub fn title(&self) -> String {
        match self.at {
            Some(_) => format!(
                " search: {}  (Ctrl-R older, Enter take, Esc back) ",
                self.query
            ),
            None => format!(" search: {}  (no match) ", self.query),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_go_from_newest_to_oldest() {
        let history: Vec<String> = ["fix the build", "run tests", "fix the docs"]
            .map(String::from)
            .to_vec();
        let mut s = Search::new(String::new());
        s.query = "FIX".into();
        assert_eq!(s.find(&history, usize::MAX), Some("fix the docs"));
        let at = s.at.unwrap_or(0);
        assert_eq!(s.find(&history, at), Some("fix the build"));
        let at = s.at.unwrap_or(0);
        assert_eq!(s.find(&history, at), None);
    }
}
