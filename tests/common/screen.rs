//! What a running `stud` printed (stdout and stderr together), read on
//! threads, for tests that type into a session and wait for its answer.

use std::io::Read as _;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Screen(Arc<Mutex<String>>);

impl Screen {
    /// Take `child`'s stdout and stderr (both piped) and read them.
    pub fn of(child: &mut Child) -> Self {
        let text = Arc::new(Mutex::new(String::new()));
        let readers: Vec<Box<dyn std::io::Read + Send>> = vec![
            Box::new(child.stdout.take().expect("stdout")),
            Box::new(child.stderr.take().expect("stderr")),
        ];
        for mut out in readers {
            let sink = text.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = out.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sink.lock()
                        .expect("screen")
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        Screen(text)
    }

    pub fn text(&self) -> String {
        self.0.lock().expect("screen").clone()
    }

    /// Wait (at most 60 s) until any of `needles` is printed.
    pub fn wait_for(&self, needles: &[&str]) -> bool {
        self.wait_until(|text| needles.iter().any(|n| text.contains(n)))
    }

    /// Wait (at most 60 s) until `needle` was printed `times` times.
    pub fn wait_for_times(&self, needle: &str, times: usize) -> bool {
        self.wait_until(|text| text.matches(needle).count() >= times)
    }

    fn wait_until(&self, done: impl Fn(&str) -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if done(&self.text()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}
