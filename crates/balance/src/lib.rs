//! Spreads connections over worker threads that accept on one shared listening socket.
//!
//! Sluice and its echo back-end run one single-threaded runtime per core, all accepting on the same
//! socket. The kernel wakes whichever thread it likes, and a burst of connects can land on one
//! thread: measured here, 100 clients connecting at once were all accepted by one of two workers
//! in some runs, leaving the other core to the rest of the machine. Nothing moves a connection
//! afterwards (a request never changes thread), so that thread stayed the only one serving them.
//!
//! A [`Seat`] per worker fixes the count: a worker that accepts a connection keeps it unless another
//! worker has fewer open connections, and then hands it over (its socket deregistered here and
//! registered there) through that worker's inbox. Connections stay counted until their
//! [`Counted`] guard drops. The exact count is what Envoy's "exact balance" does; it balances
//! connections, not requests, which suits the long keep-alive connections of a service bus.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

struct Slot {
    open: AtomicUsize,
    inbox: mpsc::UnboundedSender<std::net::TcpStream>,
}

struct Shared {
    slots: Box<[Slot]>,
}

/// One worker's place in the balance: where it hands connections to, and its inbox.
pub struct Seat {
    index: usize,
    shared: Arc<Shared>,
    inbox: mpsc::UnboundedReceiver<std::net::TcpStream>,
}

/// A connection counted against a worker until this is dropped (keep it alive with the connection).
pub struct Counted {
    index: usize,
    shared: Arc<Shared>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.shared.slots[self.index]
            .open
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// The seats of `workers` workers (at least one), one to give to each.
pub fn seats(workers: usize) -> Vec<Seat> {
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..workers.max(1))
        .map(|_| mpsc::unbounded_channel())
        .unzip();
    let shared = Arc::new(Shared {
        slots: senders
            .into_iter()
            .map(|inbox| Slot {
                open: AtomicUsize::new(0),
                inbox,
            })
            .collect(),
    });
    receivers
        .into_iter()
        .enumerate()
        .map(|(index, inbox)| Seat {
            index,
            shared: shared.clone(),
            inbox,
        })
        .collect()
}

impl Seat {
    /// The seat of a worker that is the only one.
    pub fn alone() -> Seat {
        seats(1).pop().expect("one seat")
    }

    fn counted(&self, index: usize) -> Counted {
        self.shared.slots[index]
            .open
            .fetch_add(1, Ordering::Relaxed);
        Counted {
            index,
            shared: self.shared.clone(),
        }
    }

    /// The guard of a connection handed over to this worker (counted by the sender).
    fn arrived(&self) -> Counted {
        Counted {
            index: self.index,
            shared: self.shared.clone(),
        }
    }

    /// The worker a new connection accepted here should go to: this one unless another has fewer
    /// open connections (then the one with the fewest, the lowest index among equals).
    fn target(&self) -> usize {
        let open = |k: usize| self.shared.slots[k].open.load(Ordering::Relaxed);
        let mine = open(self.index);
        (0..self.shared.slots.len())
            .map(|k| (open(k), k))
            .min()
            .filter(|&(n, _)| n < mine)
            .map_or(self.index, |(_, k)| k)
    }

    /// A connection this worker accepted: returned to be served here with its count, or `None` when
    /// it went to a less busy worker. A connection whose socket cannot be moved is closed.
    pub fn place(&self, stream: TcpStream) -> Option<(TcpStream, Counted)> {
        let to = self.target();
        if to == self.index {
            return Some((stream, self.counted(to)));
        }
        let std = stream.into_std().ok()?;
        // Counted before it is sent, so that the next placement anywhere sees it; the receiving
        // worker's guard (made in `handed` or `close`) gives the count back.
        let slot = &self.shared.slots[to];
        slot.open.fetch_add(1, Ordering::Relaxed);
        match slot.inbox.send(std) {
            Ok(()) => None,
            // That worker has stopped taking connections: served here after all.
            Err(mpsc::error::SendError(std)) => {
                slot.open.fetch_sub(1, Ordering::Relaxed);
                let stream = TcpStream::from_std(std).ok()?;
                Some((stream, self.counted(self.index)))
            }
        }
    }

    /// The next connection this worker serves: one it accepted on `listener` and kept, or one
    /// another worker handed over. Those it accepts and hands on are not returned. Cancel-safe (for
    /// `select!`); an accept error is returned as it is.
    pub async fn accept(
        &mut self,
        listener: &TcpListener,
    ) -> std::io::Result<(TcpStream, Counted)> {
        loop {
            tokio::select! {
                handed = self.handed() => return Ok(handed),
                r = listener.accept() => {
                    if let Some(kept) = self.place(r?.0) {
                        return Ok(kept);
                    }
                }
            }
        }
    }

    /// The next connection another worker handed over (cancel-safe, for `select!`). Never ends
    /// while the seat is open.
    pub async fn handed(&mut self) -> (TcpStream, Counted) {
        loop {
            let Some(std) = self.inbox.recv().await else {
                // Closed (see `close`): nothing more will come.
                return std::future::pending().await;
            };
            let count = self.arrived();
            if let Ok(stream) = TcpStream::from_std(std) {
                return (stream, count);
            }
        }
    }

    /// Stops taking connections from the other workers (they serve their own from now on) and
    /// returns those already handed over, to be served here.
    pub fn close(&mut self) -> Vec<(TcpStream, Counted)> {
        self.inbox.close();
        let mut left = Vec::new();
        while let Ok(std) = self.inbox.try_recv() {
            let count = self.arrived();
            if let Ok(stream) = TcpStream::from_std(std) {
                left.push((stream, count));
            }
        }
        left
    }

    /// Open connections counted against each worker, in seat order.
    pub fn open(&self) -> Vec<usize> {
        self.occupancy().open()
    }

    /// A view of every seat's count, for whoever reports them (the metrics page).
    pub fn occupancy(&self) -> Occupancy {
        Occupancy(self.shared.clone())
    }
}

/// The open connections of each worker of one balance ([`Seat::occupancy`]).
#[derive(Clone)]
pub struct Occupancy(Arc<Shared>);

impl Occupancy {
    /// Open connections counted against each worker, in seat order.
    pub fn open(&self) -> Vec<usize> {
        self.0
            .slots
            .iter()
            .map(|s| s.open.load(Ordering::Relaxed))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connected pair on loopback: (client side, accepted side).
    async fn pair(l: &TcpListener) -> (TcpStream, TcpStream) {
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (accepted, _) = l.accept().await.unwrap();
        (client, accepted)
    }

    /// A loopback listener and the seats of two workers.
    async fn two_workers() -> (TcpListener, Seat, Seat) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut seats = seats(2);
        let other = seats.pop().unwrap();
        let first = seats.pop().unwrap();
        (l, first, other)
    }

    #[tokio::test]
    async fn connections_go_to_the_worker_with_the_fewest() {
        let (l, first, mut other) = two_workers().await;
        let mut clients = Vec::new();
        let mut kept = Vec::new();
        // Worker 0 accepts four: equal counts keep one here, the next goes to worker 1, and so on.
        for _ in 0..4 {
            let (c, a) = pair(&l).await;
            clients.push(c);
            if let Some(k) = first.place(a) {
                kept.push(k);
            }
        }
        assert_eq!(kept.len(), 2);
        assert_eq!(first.open(), [2, 2]);
        // Worker 1 serves what it was handed: the sockets work there.
        let mut moved = vec![other.handed().await, other.handed().await];
        for (k, c) in clients.iter_mut().enumerate() {
            c.write_all(&[b'a' + k as u8]).await.unwrap();
        }
        let mut got = Vec::new();
        for (s, _) in kept.iter_mut().chain(moved.iter_mut()) {
            let mut b = [0u8; 1];
            s.read_exact(&mut b).await.unwrap();
            got.push(b[0]);
        }
        got.sort_unstable();
        assert_eq!(got, b"abcd");
        // Counts fall as connections end.
        moved.pop();
        kept.clear();
        assert_eq!(first.open(), [0, 1]);
        // Worker 1 now has more: a connection it accepts goes to worker 0.
        let (_c, a) = pair(&l).await;
        assert!(other.place(a).is_none());
        assert_eq!(other.open(), [1, 1]);
    }

    #[tokio::test]
    async fn a_closed_seat_takes_nothing_more() {
        let (l, first, mut other) = two_workers().await;
        let (_c1, a1) = pair(&l).await;
        let here = first.place(a1).expect("kept");
        let (_c2, a2) = pair(&l).await;
        assert!(first.place(a2).is_none(), "handed to worker 1");
        // Worker 1 stops: it gets back what was on its way, and worker 0 keeps the next one.
        let left = other.close();
        assert_eq!(left.len(), 1);
        let (_c3, a3) = pair(&l).await;
        let again = first.place(a3).expect("kept after the other closed");
        assert_eq!(first.open(), [2, 1]);
        drop((here, again, left));
        assert_eq!(first.open(), [0, 0]);
    }

    #[tokio::test]
    async fn accept_returns_kept_and_handed_connections() {
        let (l, mut first, mut other) = two_workers().await;
        // Worker 1 accepts two: it keeps the first and hands the second to worker 0.
        let _c1 = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let _c2 = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let kept = other.accept(&l).await.unwrap();
        let (a, _) = l.accept().await.unwrap();
        assert!(other.place(a).is_none());
        let handed = first.accept(&l).await.unwrap();
        assert_eq!(first.open(), [1, 1]);
        drop((kept, handed));
        assert_eq!(first.open(), [0, 0]);
    }

    #[test]
    fn a_lone_seat_keeps_everything() {
        let s = Seat::alone();
        assert_eq!(s.target(), 0);
        assert_eq!(s.open(), [0]);
    }
}
