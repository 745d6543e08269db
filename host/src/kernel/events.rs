//! The event bus. Every subscriber has its own bounded queue: a slow one
//! loses observer events (and is told how many, with a `bus.dropped`
//! event) but never slows the loop. Authoritative records (decisions,
//! appended messages, turn boundaries) are queued even past the bound, so
//! no subscriber ever misses one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::Notify;

use super::redact::Redactor;

/// Default queue bound per subscriber.
pub const DEFAULT_QUEUE: usize = 1024;

#[derive(Debug, Clone)]
pub struct Event {
    /// Monotonic per session; a subscriber sees increasing numbers.
    pub seq: u64,
    pub name: String,
    pub turn_id: Option<String>,
    pub timestamp_ms: u64,
    pub payload: Value,
    /// Never dropped.
    pub authoritative: bool,
}

impl Event {
    /// The stream-json line of this event.
    pub fn to_json(&self) -> Value {
        json!({"seq": self.seq, "ts": self.timestamp_ms, "event": self.name, "turn": self.turn_id, "payload": self.payload})
    }
}

pub struct Subscriber {
    pub name: String,
    queue: Mutex<VecDeque<Event>>,
    cap: usize,
    dropped: AtomicU64,
    notify: Notify,
    closed: AtomicBool,
    /// Events handed out by `next` and not yet acknowledged.
    outstanding: AtomicU64,
    /// Event names this subscriber does not want (never queued).
    skip: Option<fn(&str) -> bool>,
}

impl Subscriber {
    /// The consumer finished handling the last event `next` returned.
    pub fn ack(&self) {
        let _ = self
            .outstanding
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Nothing queued and nothing being handled.
    pub fn is_idle(&self) -> bool {
        self.outstanding.load(Ordering::Acquire) == 0
            && self
                .queue
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
    }

    /// The next event, or `None` once the bus closed and the queue drained.
    /// Losses since the last call are reported first as `bus.dropped`.
    pub async fn next(&self) -> Option<Event> {
        loop {
            let lost = self.dropped.swap(0, Ordering::AcqRel);
            if lost > 0 {
                return Some(Event {
                    seq: 0,
                    name: "bus.dropped".into(),
                    turn_id: None,
                    timestamp_ms: now_ms(),
                    payload: json!({"subscriber": self.name, "count": lost}),
                    authoritative: false,
                });
            }
            let notified = self.notify.notified();
            if let Some(ev) = self
                .queue
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front()
            {
                return Some(ev);
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            notified.await;
        }
    }

    /// Events this subscriber lost and has not been told about yet.
    pub fn pending_drops(&self) -> u64 {
        self.dropped.load(Ordering::Acquire)
    }

    fn offer(&self, ev: &Event) {
        if self.skip.is_some_and(|skip| skip(&ev.name)) {
            return;
        }
        {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            if q.len() >= self.cap && !ev.authoritative {
                self.dropped.fetch_add(1, Ordering::AcqRel);
                return;
            }
            q.push_back(ev.clone());
        }
        self.notify.notify_one();
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

#[derive(Default)]
struct BusInner {
    seq: AtomicU64,
    subscribers: Mutex<Vec<Arc<Subscriber>>>,
    turn: Mutex<Option<String>>,
    redactor: RwLock<Redactor>,
    /// The first records (the session's start), kept for one subscriber
    /// that attaches after launch (`subscribe_replaying`); `None` once
    /// taken. At most 256.
    startup: Mutex<Option<Vec<Event>>>,
}

/// Cheap to clone; all clones publish to the same subscribers.
#[derive(Clone, Default)]
pub struct Bus {
    inner: Arc<BusInner>,
}

impl Bus {
    pub fn new() -> Self {
        let bus = Self::default();
        *bus.inner.startup.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
        bus
    }

    /// Like [`Bus::subscribe`], but first hands over the records published
    /// while the session started (`session.start`, `session.resumed`, ...).
    pub fn subscribe_replaying(&self, name: &str, cap: usize) -> Arc<Subscriber> {
        let startup = self
            .inner
            .startup
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let sub = self.subscribe(name, cap);
        for ev in startup.unwrap_or_default() {
            sub.offer(&ev);
        }
        sub
    }

    pub fn subscribe(&self, name: &str, cap: usize) -> Arc<Subscriber> {
        self.subscribe_except(name, cap, None)
    }

    /// A subscriber that never receives the events `skip` names (so they
    /// cost it nothing, not even a queue slot).
    pub fn subscribe_except(
        &self,
        name: &str,
        cap: usize,
        skip: Option<fn(&str) -> bool>,
    ) -> Arc<Subscriber> {
        let sub = Arc::new(Subscriber {
            name: name.to_string(),
            queue: Mutex::new(VecDeque::new()),
            cap: cap.max(1),
            dropped: AtomicU64::new(0),
            notify: Notify::new(),
            closed: AtomicBool::new(false),
            outstanding: AtomicU64::new(0),
            skip,
        });
        self.inner
            .subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sub.clone());
        sub
    }

    /// The turn later events belong to.
    pub fn set_turn(&self, turn: Option<String>) {
        *self.inner.turn.lock().unwrap_or_else(|p| p.into_inner()) = turn;
    }

    /// Secret values to cut from every later event.
    pub fn set_redactor(&self, redactor: Redactor) {
        *self
            .inner
            .redactor
            .write()
            .unwrap_or_else(|p| p.into_inner()) = redactor;
    }

    /// `text` with known secret values cut (for messages that leave the bus).
    pub fn redact(&self, text: &str) -> String {
        self.inner
            .redactor
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .text(text)
    }

    /// Cut known secret values out of `text` in place.
    pub fn scrub(&self, text: &mut String) {
        self.inner
            .redactor
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .scrub(text)
    }

    /// An observer event: may be dropped for a slow subscriber.
    pub fn publish(&self, name: &str, payload: Value) {
        self.send(name, payload, false);
    }

    /// An authoritative record: never dropped.
    pub fn record(&self, name: &str, payload: Value) {
        self.send(name, payload, true);
    }

    fn send(&self, name: &str, mut payload: Value, authoritative: bool) {
        self.inner
            .redactor
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .value(&mut payload);
        let subs = self
            .inner
            .subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let ev = Event {
            seq: self.inner.seq.fetch_add(1, Ordering::AcqRel) + 1,
            name: name.to_string(),
            turn_id: self
                .inner
                .turn
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            timestamp_ms: now_ms(),
            payload,
            authoritative,
        };
        if authoritative
            && let Some(buf) = self
                .inner
                .startup
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
            && buf.len() < 256
        {
            buf.push(ev.clone());
        }
        for s in subs {
            s.offer(&ev);
        }
    }

    /// No more events; subscribers drain what they have and stop.
    pub fn close(&self) {
        for s in self
            .inner
            .subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            s.close();
        }
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slow_subscriber_loses_observer_events_but_not_records() {
        let bus = Bus::new();
        let sub = bus.subscribe("slow", 2);
        for i in 0..5 {
            bus.publish("tick", json!({"i": i}));
        }
        bus.record("decision", json!({}));
        bus.close();
        let mut names = Vec::new();
        while let Some(ev) = sub.next().await {
            names.push((ev.name.clone(), ev.payload.get("count").cloned()));
        }
        assert_eq!(names[0], ("bus.dropped".to_string(), Some(json!(3))));
        assert_eq!(names.iter().filter(|(n, _)| n == "tick").count(), 2);
        assert_eq!(names.last().map(|(n, _)| n.as_str()), Some("decision"));
    }

    #[tokio::test]
    async fn sequence_numbers_increase() {
        let bus = Bus::new();
        let sub = bus.subscribe("s", 16);
        bus.publish("a", json!({}));
        bus.publish("b", json!({}));
        bus.close();
        let a = sub.next().await.unwrap();
        let b = sub.next().await.unwrap();
        assert!(b.seq > a.seq);
    }
}
