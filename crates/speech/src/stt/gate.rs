//! A fair limit on concurrent decodes: permits are handed out in the order
//! they were asked for, so a job that asks again after each chunk of a long
//! file lets a job that arrived meanwhile go first.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

pub struct DecodeGate {
    permits: usize,
    state: Mutex<GateState>,
    wake: Condvar,
}

struct GateState {
    free: usize,
    queue: VecDeque<u64>,
    next: u64,
}

/// A held permit; dropping it lets the next waiter in.
pub struct Permit<'a> {
    gate: &'a DecodeGate,
}

impl DecodeGate {
    /// At most `permits` decodes at once (at least one).
    pub fn new(permits: usize) -> Self {
        Self {
            permits: permits.max(1),
            state: Mutex::new(GateState {
                free: permits.max(1),
                queue: VecDeque::new(),
                next: 0,
            }),
            wake: Condvar::new(),
        }
    }

    /// How many decodes may run at once.
    pub fn permits(&self) -> usize {
        self.permits
    }

    /// Waits for a permit, first come first served.
    pub fn acquire(&self) -> Permit<'_> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let ticket = s.next;
        s.next += 1;
        s.queue.push_back(ticket);
        while !(s.free > 0 && s.queue.front() == Some(&ticket)) {
            s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.queue.pop_front();
        s.free -= 1;
        // The next in line may also fit.
        self.wake.notify_all();
        Permit { gate: self }
    }

    /// A permit now if one is free and nobody waits for it (an idle core
    /// for optional work), else none.
    pub fn try_acquire(&self) -> Option<Permit<'_>> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.free == 0 || !s.queue.is_empty() {
            return None;
        }
        s.free -= 1;
        Some(Permit { gate: self })
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut s = self.gate.state.lock().unwrap_or_else(|e| e.into_inner());
        s.free += 1;
        self.gate.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_spare_permit_is_taken_only_when_free() {
        let gate = DecodeGate::new(2);
        let first = gate.acquire();
        let spare = gate.try_acquire();
        assert!(spare.is_some());
        assert!(gate.try_acquire().is_none(), "both taken");
        drop(spare);
        assert!(gate.try_acquire().is_some());
        drop(first);
    }

    #[test]
    fn waiters_are_served_in_arrival_order() {
        let gate = Arc::new(DecodeGate::new(1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = gate.acquire();
        let mut threads = Vec::new();
        for i in 0..4 {
            let (gate, order) = (gate.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let _p = gate.acquire();
                order.lock().unwrap().push(i);
            }));
            // Each waiter queues before the next one starts.
            std::thread::sleep(Duration::from_millis(30));
        }
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
    }
}
