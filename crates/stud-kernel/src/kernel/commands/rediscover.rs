//! `/reload` for commands: forget the instances and read the command set
//! again, so commands added, removed or renamed on disk take effect at
//! once. A project's command is taken as it is now only when the
//! project's accepted trust review lists it (`extensions::accepted`): a
//! command a `git pull` added is left out, and one that changed keeps the
//! version this session started with, each with a warning that says to
//! run `stud trust grant`.

use stud_protocol::events::KernelEvent;

use super::{Catalogue, Commands};
use crate::extensions::accepted::Accepted;
use crate::extensions::{Discovered, Discovery, Scope};

impl Commands {
    /// `/reload`: rescan extensions (swapped in at the next stage
    /// boundary) and forget command instances, so the next dispatch loads
    /// (and verifies) what is on disk now.
    pub(super) fn reload(&mut self, reloader: Option<&crate::kernel::reload::Reloader>) -> String {
        if let Some(r) = reloader {
            r.rescan(true);
        }
        self.instances.clear();
        self.rediscover();
        "looking for changed extensions; they are swapped in at the next stage boundary".into()
    }

    /// Read the command set again (after `/reload`).
    fn rediscover(&mut self) {
        let discovery = Discovery::scan(&self.env.home, &self.env.project);
        let (found, mut warnings) = self.reviewed(discovery.found);
        let (catalogue, built) = Catalogue::build(&found, &self.settings);
        warnings.extend(built);
        for w in warnings {
            self.bus.publish(KernelEvent::Diagnostic {
                level: stud_protocol::events::Level::Warn,
                message: w,
            });
        }
        self.catalogue = catalogue;
        self.env.found = found;
    }

    /// `found` with each project extension the accepted review does not
    /// list replaced by the version this session had (or left out when it
    /// had none), and a warning for each.
    fn reviewed(&self, found: Vec<Discovered>) -> (Vec<Discovered>, Vec<String>) {
        let mut accepted: Option<Accepted> = None;
        let mut warnings = Vec::new();
        let mut kept = Vec::new();
        for d in found {
            if d.scope != Scope::Project {
                kept.push(d);
                continue;
            }
            let review = accepted
                .get_or_insert_with(|| Accepted::read(self.env.home.root(), &self.env.project));
            let Err(not) = review.admits(&d) else {
                kept.push(d);
                continue;
            };
            let id = d.manifest.id.to_string();
            let had = self
                .env
                .found
                .iter()
                .find(|o| o.scope == d.scope && o.manifest.id == d.manifest.id);
            match had {
                // Unchanged since the session started: it stays as it was.
                Some(old)
                    if old.manifest == d.manifest && old.expected_digest == d.expected_digest =>
                {
                    kept.push(d)
                }
                Some(old) => {
                    warnings.push(not.refusal(&id, "The version this session started with stays."));
                    kept.push(old.clone());
                }
                None => warnings.push(not.refusal(&id, "It is left out until then.")),
            }
        }
        (kept, warnings)
    }
}
