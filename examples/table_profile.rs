//! A driver of `columnar::build_table` over the benchmark's shapes (`benches/test_bench_table.py`:
//! groups of candidates with about 190-character contents, a tenth of the group's size in files,
//! a third of the windows overlapping, reasons 10/30/60% failure/reference/search), for timing
//! and instruction counts without Python:
//!
//!     cargo run --release --no-default-features --example table_profile -- GROUPS PER_GROUP [ROUNDS] [THREADS]
//!     valgrind --tool=callgrind target/release/examples/table_profile 2000 100 1 1
//!
//! Prints the thread CPU time of each round (from `/proc/thread-self/schedstat`) and the rate.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, DictionaryArray, Float64Array, Int32Array, LargeStringArray, RecordBatch, StringArray,
};
use bugcontext::columnar::{Budget, Spec, Unit, build_table};

const WORDS: [&str; 14] = [
    "user", "config", "path", "items", "result", "value", "node", "parser", "token", "buffer",
    "cache", "index", "count", "offset",
];

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn pool(rng: &mut Rng) -> Vec<String> {
    (0..20_000)
        .map(|i| {
            let lines = 1 + rng.below(12);
            let mut text = String::new();
            for _ in 0..lines {
                let a = WORDS[rng.below(14) as usize];
                let b = WORDS[rng.below(14) as usize];
                text.push_str(&format!("{a}_{} = {b}({i})\n", rng.below(100)));
            }
            if i % 50 == 0 {
                text.push_str("naïve → 日本語\n");
            }
            text
        })
        .collect()
}

fn table(groups: usize, per_group: usize) -> (Vec<RecordBatch>, u64) {
    let mut rng = Rng(1);
    let pool = pool(&mut rng);
    let files = (per_group / 10).max(1) as u64;
    let n = groups * per_group;
    let (mut task, mut path, mut start, mut end) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut content, mut reason, mut score) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut chars = 0usize;
    for g in 0..groups {
        for _ in 0..per_group {
            let text = &pool[rng.below(pool.len() as u64) as usize];
            let span = text.matches('\n').count() as i32;
            let s = 1 + rng.below(400) as i32;
            task.push(format!("task-{g:05}"));
            path.push(format!("src/pkg_{}/mod_{}.py", g % 97, rng.below(files)));
            start.push(s);
            end.push(s + span - 1);
            if g == 0 {
                chars += text.chars().count();
            }
            content.push(text.as_str());
            let r = rng.below(10);
            reason.push(match r {
                0 => "failure",
                1..=3 => "reference",
                _ => "search",
            });
            let x = rng.unit() * 8.0;
            score.push(if rng.below(5) == 0 {
                (x * 10.0).round() / 10.0
            } else {
                x
            });
        }
    }
    let budget = (0.3 * chars as f64) as u64;
    let mut batches = Vec::new();
    let mut lo = 0;
    while lo < n {
        let hi = (lo + 65_536).min(n);
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("task", Arc::new(StringArray::from(task[lo..hi].to_vec()))),
            ("path", Arc::new(StringArray::from(path[lo..hi].to_vec()))),
            ("start", Arc::new(Int32Array::from(start[lo..hi].to_vec()))),
            ("end", Arc::new(Int32Array::from(end[lo..hi].to_vec()))),
            (
                "content",
                Arc::new(LargeStringArray::from(content[lo..hi].to_vec())),
            ),
            (
                "reason",
                Arc::new(
                    reason[lo..hi]
                        .iter()
                        .copied()
                        .collect::<DictionaryArray<Int32Type>>(),
                ),
            ),
            (
                "score",
                Arc::new(Float64Array::from(score[lo..hi].to_vec())),
            ),
        ];
        batches.push(RecordBatch::try_from_iter(columns).unwrap());
        lo = hi;
    }
    (batches, budget)
}

/// CPU seconds of every thread of the process (the global pool's threads live on), by id.
fn thread_cpu() -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let stat = std::fs::read_to_string(entry.path().join("schedstat")).unwrap_or_default();
        let ns: u64 = stat
            .split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        out.push((
            entry.file_name().to_string_lossy().into_owned(),
            ns as f64 / 1e9,
        ));
    }
    out
}

/// Per thread, the CPU seconds used between `before` and `after`, busiest first.
fn used(before: &[(String, f64)], after: &[(String, f64)]) -> Vec<f64> {
    let mut used: Vec<f64> = after
        .iter()
        .map(|(id, t)| t - before.iter().find(|(b, _)| b == id).map_or(0.0, |b| b.1))
        .filter(|&t| t > 1e-4)
        .collect();
    used.sort_by(|a, b| b.total_cmp(a));
    used
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers"))
        .collect();
    let groups = args.first().copied().unwrap_or(10_000);
    let per_group = args.get(1).copied().unwrap_or(100);
    let rounds = args.get(2).copied().unwrap_or(3);
    let threads = args.get(3).copied().unwrap_or(1);
    let (batches, budget) = table(groups, per_group);
    let n = groups * per_group;
    let spec = Spec {
        group_by: Some("task".to_owned()),
        budget: Budget::Fixed(budget),
        failure_files: None,
        unit: Unit::Chars,
        max_candidates: u64::MAX,
        max_total_chars: u64::MAX,
        threads: None,
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .expect("the global pool");
    rayon::broadcast(|_| ()); // start the pool's threads before the first timing
    for _ in 0..rounds {
        let (cpu, wall) = (thread_cpu(), Instant::now());
        let out = build_table(&batches, &spec).expect("a valid table");
        let wall = wall.elapsed().as_secs_f64();
        let per_thread = used(&cpu, &thread_cpu());
        let cpu: f64 = per_thread.iter().sum();
        assert_eq!(out.decisions.num_rows(), n);
        let shown: Vec<String> = per_thread.iter().map(|t| format!("{t:.3}")).collect();
        println!(
            "{groups} x {per_group}, {threads} thread(s): {cpu:.3} CPU s ({}), {wall:.3} s wall, {:.2}M rows per CPU-second",
            shown.join(" + "),
            n as f64 / cpu / 1e6
        );
    }
}
