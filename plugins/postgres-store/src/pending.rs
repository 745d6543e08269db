//! Writes not yet committed, in the order they were made, bounded by a
//! number of records so a long outage cannot eat the process's memory.

use std::collections::VecDeque;

pub enum Item {
    Records {
        session_id: String,
        records: Vec<String>,
        /// The number of the first record, fixed at the first attempt.
        first_seq: Option<i64>,
    },
    Manifest {
        session_id: String,
        text: String,
    },
}

impl Item {
    pub fn session_id(&self) -> &str {
        match self {
            Item::Records { session_id, .. } | Item::Manifest { session_id, .. } => session_id,
        }
    }

    pub fn record_count(&self) -> usize {
        match self {
            Item::Records { records, .. } => records.len(),
            Item::Manifest { .. } => 0,
        }
    }
}

#[derive(Default)]
pub struct Pending {
    items: VecDeque<Item>,
    records: usize,
    max_records: usize,
}

impl Pending {
    pub fn new(max_records: usize) -> Self {
        Pending {
            max_records,
            ..Default::default()
        }
    }

    /// Queue `item`; a manifest replaces one of the same session still
    /// queued (only the newest matters). `Err(n)`: over the bound, the
    /// item's `n` records are refused.
    pub fn push(&mut self, item: Item) -> Result<(), usize> {
        let n = item.record_count();
        if n > 0 && !self.items.is_empty() && self.records + n > self.max_records {
            return Err(n);
        }
        if let Item::Manifest { session_id, text } = &item
            && let Some(Item::Manifest { text: queued, .. }) = self
                .items
                .iter_mut()
                .find(|i| matches!(i, Item::Manifest { session_id: s, .. } if s == session_id))
        {
            queued.clone_from(text);
            return Ok(());
        }
        self.records += n;
        self.items.push_back(item);
        Ok(())
    }

    pub fn front(&self) -> Option<&Item> {
        self.items.front()
    }

    pub fn front_mut(&mut self) -> Option<&mut Item> {
        self.items.front_mut()
    }

    pub fn pop_front(&mut self) {
        if let Some(item) = self.items.pop_front() {
            self.records -= item.record_count();
        }
    }

    /// Forget what is queued for one session (deleted, or taken by
    /// another process).
    pub fn drop_session(&mut self, session_id: &str) {
        self.items.retain(|i| i.session_id() != session_id);
        self.records = self.items.iter().map(Item::record_count).sum();
    }

    /// Records queued for one session.
    pub fn records_of(&self, session_id: &str) -> usize {
        self.items
            .iter()
            .filter(|i| i.session_id() == session_id)
            .map(Item::record_count)
            .sum()
    }

    /// Records queued.
    pub fn records(&self) -> usize {
        self.records
    }
}
