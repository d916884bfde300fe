//! `ferry-bench fsync`: appends `--bytes` to a file and fdatasyncs, `--count` times, under `--dir`: the disk's
//! raw fsync latency, the ceiling of any commit mode that fsyncs every transaction.

use std::io::Write;
use std::time::Instant;

use hdrhistogram::Histogram;

#[derive(clap::Args)]
pub struct Args {
    /// Directory on the disk to measure (a temporary file is created and removed there).
    #[arg(long, default_value = ".")]
    dir: std::path::PathBuf,
    #[arg(long, default_value_t = 2000)]
    count: u64,
    /// Bytes appended before each fsync (about one small transaction).
    #[arg(long, default_value_t = 200)]
    bytes: usize,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let path = args.dir.join(format!(".ferry-fsync-bench-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new().create(true).truncate(true).write(true).open(&path)?;
    let payload = vec![0xA5u8; args.bytes];
    let mut hist = Histogram::<u64>::new(3)?;
    let started = Instant::now();
    for _ in 0..args.count {
        let t = Instant::now();
        file.write_all(&payload)?;
        file.sync_data()?;
        hist.record(t.elapsed().as_micros().max(1) as u64)?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    drop(file);
    std::fs::remove_file(&path)?;
    let per_s = args.count as f64 / elapsed;
    println!(
        "{} fsyncs of {}-byte appends in {elapsed:.2}s: {per_s:.0}/s, mean {:.1} us, p50 {} us, p99 {} us",
        args.count,
        args.bytes,
        hist.mean(),
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.99)
    );
    let figures = serde_json::json!({
        "fsyncs_per_s": per_s.round(),
        "mean_us": (hist.mean() * 10.0).round() / 10.0,
        "p50_us": hist.value_at_quantile(0.5),
        "p99_us": hist.value_at_quantile(0.99),
        "count": args.count,
        "bytes": args.bytes,
    });
    println!("{figures}");
    Ok(())
}
