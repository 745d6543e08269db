//! The event bus. Every subscriber has its own bounded queue: a slow one
//! loses observer events but never slows the loop. It is told how many
//! with `bus.dropped` notices, coalesced: at most one per
//! [`DROP_NOTICE_INTERVAL`] while it falls behind, and one when it caught
//! up, each with a count and a `seq` of its own in the bus's order.
//! Authoritative records (decisions, appended messages, tool outcomes,
//! turn boundaries) are queued even past the bound, so no subscriber ever
//! misses one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::Notify;

use stud_protocol::events::{EventKind, KernelEvent};

use super::redact::Redactor;

/// Default queue bound per subscriber.
pub const DEFAULT_QUEUE: usize = 1024;
/// Shortest time between two `bus.dropped` notices to one subscriber
/// while it keeps losing events.
pub const DROP_NOTICE_INTERVAL: Duration = Duration::from_secs(1);

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
    /// The kernel event this is; `None` for an extension's own event.
    pub fn kind(&self) -> Option<EventKind> {
        EventKind::from_name(&self.name)
    }

    /// The stream-json line of this event.
    pub fn to_json(&self) -> Value {
        json!({"seq": self.seq, "ts": self.timestamp_ms, "event": self.name, "turn": self.turn_id, "payload": self.payload})
    }
}

pub struct Subscriber {
    pub name: String,
    queue: Mutex<VecDeque<Event>>,
    cap: usize,
    /// Lost and not yet reported.
    dropped: AtomicU64,
    /// When the last `bus.dropped` notice was made.
    last_notice: Mutex<Option<Instant>>,
    /// The bus's last sequence number; held while an event is numbered
    /// and queued, so every subscriber sees numbers only grow.
    order: Arc<Mutex<u64>>,
    notify: Notify,
    /// Woken when the consumer acknowledged its last event and nothing is
    /// queued (`idle`).
    idle: Notify,
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
        if self.is_idle() {
            self.idle.notify_waiters();
        }
    }

    /// Wait until nothing is queued and nothing is being handled: whoever
    /// answers after a turn (an editor's prompt) knows every event of it
    /// went out first.
    pub async fn idle(&self) {
        loop {
            // Registered before the check, so an ack in between wakes it.
            let woken = self.idle.notified();
            if self.is_idle() {
                return;
            }
            woken.await;
        }
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
    /// A consumer that others wait on (`is_idle`) calls `ack` once it has
    /// handled the event.
    pub async fn next(&self) -> Option<Event> {
        loop {
            let notified = self.notify.notified();
            if let Some(ev) = self
                .queue
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front()
            {
                self.outstanding.fetch_add(1, Ordering::AcqRel);
                return Some(ev);
            }
            // Caught up: what was lost since the last notice, in one,
            // numbered after everything queued so far.
            {
                let mut last = self.order.lock().unwrap_or_else(|p| p.into_inner());
                let empty = self
                    .queue
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_empty();
                if !empty {
                    continue;
                }
                if let Some(notice) = self.drop_notice(&mut last) {
                    self.outstanding.fetch_add(1, Ordering::AcqRel);
                    return Some(notice);
                }
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            notified.await;
        }
    }

    /// Append the text of the `provider.tokens` events queued right behind
    /// `ev` (itself one) to it, up to `max_bytes` of text, so a consumer
    /// that draws pays one call for a burst instead of one per delta. The
    /// merged event keeps the last one's number; each merged event is
    /// handed out and acknowledged with it.
    pub fn merge_queued_tokens(&self, ev: &mut Event, max_bytes: usize) {
        let tokens = EventKind::ProviderTokens.name();
        if ev.name != tokens {
            return;
        }
        let Some(mut text) = ev
            .payload
            .get("delta")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return;
        };
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let mut merged = false;
        while text.len() < max_bytes {
            let next_delta = match q.front() {
                Some(n) if n.name == tokens && n.turn_id == ev.turn_id => {
                    n.payload.get("delta").and_then(Value::as_str)
                }
                _ => None,
            };
            let Some(delta) = next_delta else { break };
            text.push_str(delta);
            if let Some(n) = q.pop_front() {
                ev.seq = n.seq;
                ev.timestamp_ms = n.timestamp_ms;
            }
            merged = true;
        }
        if merged {
            ev.payload = KernelEvent::ProviderTokens { delta: text }.payload();
        }
    }

    /// A `bus.dropped` notice for everything lost and not yet reported.
    fn drop_notice(&self, last: &mut u64) -> Option<Event> {
        let lost = self.dropped.swap(0, Ordering::AcqRel);
        if lost == 0 {
            return None;
        }
        *self.last_notice.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        *last += 1;
        Some(Event {
            seq: *last,
            name: EventKind::BusDropped.name().into(),
            turn_id: None,
            timestamp_ms: now_ms(),
            payload: KernelEvent::BusDropped {
                subscriber: self.name.clone(),
                count: lost,
            }
            .payload(),
            authoritative: false,
        })
    }

    /// Events this subscriber lost and has not been told about yet.
    pub fn pending_drops(&self) -> u64 {
        self.dropped.load(Ordering::Acquire)
    }

    /// Queue `ev`; `last` is the bus's sequence, held by the caller.
    fn offer(&self, ev: &Event, last: &mut u64) {
        if self.skip.is_some_and(|skip| skip(&ev.name)) {
            return;
        }
        {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            if q.len() >= self.cap && !ev.authoritative {
                self.dropped.fetch_add(1, Ordering::AcqRel);
                // Falling behind for a while: say so now and then, in the
                // queue's order, rather than only once it caught up.
                let due = self
                    .last_notice
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_none_or(|t| t.elapsed() >= DROP_NOTICE_INTERVAL);
                if due && let Some(notice) = self.drop_notice(last) {
                    q.push_back(notice);
                }
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
    /// The last sequence number handed out.
    order: Arc<Mutex<u64>>,
    subscribers: Mutex<Vec<Arc<Subscriber>>>,
    turn: Mutex<Option<String>>,
    redactor: RwLock<Redactor>,
    /// The first records (the session's start), kept for one subscriber
    /// that attaches after launch (`subscribe_replaying`); `None` once
    /// taken. At most 256.
    startup: Mutex<Option<Vec<Event>>>,
    /// What a replay of this session will need ([`super::replay`]).
    trace: super::replay::Trace,
    /// Set when this session is a replay: what answers it instead of the
    /// provider, the tools that write and the person.
    replayer: std::sync::OnceLock<Arc<super::replay::Replayer>>,
}

/// Cheap to clone; all clones publish to the same subscribers.
#[derive(Clone, Default)]
pub struct Bus {
    inner: Arc<BusInner>,
    /// A child session's handle: its events say whose they are.
    scope: Option<Arc<AgentScope>>,
}

/// What a child session's events carry: the agent path (`main/reviewer`),
/// in every payload as `agent`, and the child's own current turn (a child
/// turn runs while the parent's is open).
struct AgentScope {
    path: String,
    turn: Mutex<Option<String>>,
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
        let mut last = self.inner.order.lock().unwrap_or_else(|p| p.into_inner());
        for ev in startup.unwrap_or_default() {
            sub.offer(&ev, &mut last);
        }
        drop(last);
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
            last_notice: Mutex::new(None),
            order: self.inner.order.clone(),
            notify: Notify::new(),
            idle: Notify::new(),
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

    /// A handle for a child session at `path` (`main/reviewer`): the same
    /// subscribers and numbering, its events tagged with the path.
    pub fn scoped(&self, path: &str) -> Bus {
        Bus {
            inner: self.inner.clone(),
            scope: Some(Arc::new(AgentScope {
                path: path.to_string(),
                turn: Mutex::new(None),
            })),
        }
    }

    /// The session's trace (shared with its children).
    pub fn trace(&self) -> &super::replay::Trace {
        &self.inner.trace
    }

    /// What answers this session when it is a replay.
    pub fn replayer(&self) -> Option<&Arc<super::replay::Replayer>> {
        self.inner.replayer.get()
    }

    /// Make this session a replay (before it starts).
    pub fn set_replayer(&self, replayer: Arc<super::replay::Replayer>) {
        let _ = self.inner.replayer.set(replayer);
    }

    /// The agent path of a child session's handle; `None` for the main one.
    pub fn agent_path(&self) -> Option<&str> {
        self.scope.as_ref().map(|s| s.path.as_str())
    }

    /// The turn later events belong to.
    pub fn set_turn(&self, turn: Option<String>) {
        let slot = match &self.scope {
            Some(scope) => &scope.turn,
            None => &self.inner.turn,
        };
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = turn;
    }

    /// Secret values to cut from every later event.
    pub fn set_redactor(&self, redactor: Redactor) {
        *self
            .inner
            .redactor
            .write()
            .unwrap_or_else(|p| p.into_inner()) = redactor;
    }

    /// Known secret values cut from every string of `value`, in place:
    /// before it is serialized, so an escaped form cannot slip past.
    pub fn redact_value(&self, value: &mut Value) {
        self.inner
            .redactor
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .value(value)
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
    pub fn publish(&self, event: KernelEvent) {
        self.send(event.name(), event.payload(), false);
    }

    /// An authoritative record: never dropped.
    pub fn record(&self, event: KernelEvent) {
        self.inner.trace.observe(self.agent_path(), &event);
        self.send(event.name(), event.payload(), true);
    }

    /// An event an extension emitted under its own name (an observer
    /// event: it may be dropped).
    pub fn publish_named(&self, name: &str, payload: Value) {
        self.send(name, payload, false);
    }

    fn send(&self, name: &str, mut payload: Value, authoritative: bool) {
        self.inner
            .redactor
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .value(&mut payload);
        if let Some(scope) = &self.scope
            && let Value::Object(map) = &mut payload
        {
            map.insert("agent".into(), Value::String(scope.path.clone()));
        }
        let turn_slot = match &self.scope {
            Some(scope) => &scope.turn,
            None => &self.inner.turn,
        };
        let turn_id = turn_slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let subs = self
            .inner
            .subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // Numbered and queued under one lock: concurrent publishers (tools
        // running in parallel) never queue a higher number before a lower.
        let mut last = self.inner.order.lock().unwrap_or_else(|p| p.into_inner());
        *last += 1;
        let ev = Event {
            seq: *last,
            name: name.to_string(),
            turn_id,
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
            s.offer(&ev, &mut last);
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
            bus.publish_named("tick", json!({"i": i}));
        }
        bus.record(KernelEvent::HistoryCleared {
            session_id: "s".into(),
        });
        bus.close();
        let mut names = Vec::new();
        while let Some(ev) = sub.next().await {
            names.push((ev.name.clone(), ev.payload.get("count").cloned()));
        }
        // One notice at the first loss (in the queue's order), one with
        // the rest once the subscriber caught up.
        let notices: Vec<_> = names.iter().filter(|(n, _)| n == "bus.dropped").collect();
        assert_eq!(notices.len(), 2, "{names:?}");
        let lost: u64 = notices
            .iter()
            .filter_map(|(_, c)| c.as_ref()?.as_u64())
            .sum();
        assert_eq!(lost, 3);
        assert_eq!(names.iter().filter(|(n, _)| n == "tick").count(), 2);
        assert!(names.iter().any(|(n, _)| n == "history.cleared"));
    }

    #[tokio::test]
    async fn a_flood_gives_few_notices_in_order() {
        let bus = Bus::new();
        let sub = bus.subscribe("slow", 8);
        for i in 0..200_000 {
            bus.publish_named("tick", json!({"i": i}));
        }
        bus.record(KernelEvent::HistoryCleared {
            session_id: "s".into(),
        });
        bus.close();
        let mut seqs = Vec::new();
        let mut notices = 0;
        let mut lost = 0;
        while let Some(ev) = sub.next().await {
            if ev.name == "bus.dropped" {
                notices += 1;
                lost += ev.payload["count"].as_u64().unwrap();
            }
            seqs.push(ev.seq);
        }
        assert!(notices <= 3, "{notices} notices");
        assert_eq!(lost, 200_000 - 8);
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "out of order");
        assert!(seqs.iter().all(|s| *s > 0));
    }

    #[tokio::test]
    async fn queued_token_bursts_merge_up_to_the_bound_and_stop_at_other_events() {
        let bus = Bus::new();
        let sub = bus.subscribe("ui", 64);
        for d in ["a", "b", "c"] {
            bus.publish(KernelEvent::ProviderTokens { delta: d.into() });
        }
        bus.publish_named("other", json!({}));
        for d in ["dd", "ee", "ff"] {
            bus.publish(KernelEvent::ProviderTokens { delta: d.into() });
        }
        bus.close();
        let mut first = sub.next().await.unwrap();
        sub.merge_queued_tokens(&mut first, 1024);
        assert_eq!(first.payload["delta"], "abc");
        let other = sub.next().await.unwrap();
        assert_eq!(other.name, "other");
        assert!(
            other.seq > first.seq,
            "the merged event keeps the last number"
        );
        let mut second = sub.next().await.unwrap();
        sub.merge_queued_tokens(&mut second, 4);
        assert_eq!(
            second.payload["delta"], "ddee",
            "stops once the bound is reached"
        );
        let mut third = sub.next().await.unwrap();
        sub.merge_queued_tokens(&mut third, 4);
        assert_eq!(third.payload["delta"], "ff");
        assert!(sub.next().await.is_none());
    }

    #[tokio::test]
    async fn a_subscriber_is_idle_only_once_the_event_it_handles_is_acked() {
        let bus = Bus::new();
        let sub = bus.subscribe("ui", 8);
        bus.publish_named("a", json!({}));
        assert!(!sub.is_idle());
        let _ = sub.next().await.unwrap();
        assert!(!sub.is_idle(), "handed out, not yet handled");
        sub.ack();
        assert!(sub.is_idle());
        sub.ack();
        assert!(sub.is_idle(), "an extra ack does not underflow");
        sub.idle().await;
    }

    #[tokio::test]
    async fn idle_wakes_on_the_ack_that_makes_the_subscriber_idle() {
        let bus = Bus::new();
        let sub = bus.subscribe("ui", 8);
        bus.publish_named("a", json!({}));
        let _ = sub.next().await.unwrap();
        let waiter = tokio::spawn({
            let sub = sub.clone();
            async move { sub.idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "still handling the event");
        sub.ack();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken by the ack")
            .unwrap();
    }

    #[tokio::test]
    async fn sequence_numbers_increase() {
        let bus = Bus::new();
        let sub = bus.subscribe("s", 16);
        bus.publish_named("a", json!({}));
        bus.publish_named("b", json!({}));
        bus.close();
        let a = sub.next().await.unwrap();
        let b = sub.next().await.unwrap();
        assert!(b.seq > a.seq);
    }
}
