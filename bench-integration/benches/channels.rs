//! Async bodies on tokio (the harness's `tokio` feature): a message's round trip through
//! tokio's channels, the runtime built once by each case outside the timing.
//!
//! `channels/mpsc/1000` sends 1,000 u64 through a bounded mpsc channel of 64 and receives
//! them in the same task (a body of sends and receives, each awaited);
//! `channels/oneshot` one value through a oneshot; `channels/mpsc/spawned/1000` the same
//! thousand sent by a task spawned onto a multi-thread runtime's worker and received on
//! the case's thread, the hand-off between threads in the time.

use sparkles_bench::Suite;
use tokio::sync::{mpsc, oneshot};

fn main() {
    let mut suite = Suite::new("channels");
    suite.group("channels", |g| {
        g.case("mpsc/1000", |b| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a current-thread runtime");
            b.to_async(&rt).iter(|| async {
                let (tx, mut rx) = mpsc::channel::<u64>(64);
                let mut sum = 0;
                for chunk in 0..1000u64 / 50 {
                    for i in 0..50 {
                        tx.send(chunk * 50 + i).await.expect("receiver alive");
                    }
                    for _ in 0..50 {
                        sum += rx.recv().await.expect("sender alive");
                    }
                }
                sum
            })
        });
        g.case("oneshot", |b| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a current-thread runtime");
            b.to_async(&rt).iter(|| async {
                let (tx, rx) = oneshot::channel::<u64>();
                tx.send(7).expect("receiver alive");
                rx.await.expect("sent")
            })
        });
        g.case("mpsc/spawned/1000", |b| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .build()
                .expect("a multi-thread runtime");
            b.to_async(&rt).iter(|| async {
                let (tx, mut rx) = mpsc::channel::<u64>(64);
                tokio::spawn(async move {
                    for i in 0..1000u64 {
                        tx.send(i).await.expect("receiver alive");
                    }
                });
                let mut sum = 0;
                while let Some(v) = rx.recv().await {
                    sum += v;
                }
                sum
            })
        });
    });
    sparkles_bench::main(suite)
}
