//! `bench-chart RESULTS.jsonl OUT.svg`: the chart of `bench/java/run`'s cells, the
//! median over rounds of each. Three panels over the cells {dubbo, tri} x {16 B, 4 KiB,
//! the contract's User} x {1, 32, 256} in flight: calls/s and server CPU per call of Java Dubbo and Rubbo
//! driven by `rubbo bench`, and the client CPU per call of the Java client and of
//! `rubbo bench` driving Java Dubbo.
//!
//! `bench-chart --echo echo.jsonl OUT.svg` draws the echo bench's chart instead (see
//! [`echo`]).

mod echo;

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

/// (server, client, protocol, payload, in flight)
type Key = (String, String, String, String, u64);
/// (protocol, payload, in flight)
type Cell<'a> = (&'a str, &'a str, u64);
/// A cell's value for (server, client).
type Lookup<'a> = &'a dyn Fn(&str, &str, Cell<'_>) -> Option<f64>;

const PROTOCOLS: [&str; 2] = ["dubbo", "tri"];
/// The payloads' names, as `bench/java/run` writes them (`16 B`, `4 KiB`, `User`).
const PAYLOADS: [&str; 3] = ["16 B", "4 KiB", "User"];
const INFLIGHT: [u64; 3] = [1, 32, 256];
const JAVA: RGBColor = RGBColor(0xd6, 0x5f, 0x00);
const RUST: RGBColor = RGBColor(0x1f, 0x5f, 0xa8);

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// A payload's name: as written, or from a size in bytes (older result files).
fn payload_name(v: &Value) -> Option<String> {
    match (v.as_str(), v.as_u64()) {
        (Some(s), _) => Some(s.to_owned()),
        (None, Some(b)) if b >= 1024 => Some(format!("{} KiB", b / 1024)),
        (None, Some(b)) => Some(format!("{b} B")),
        _ => None,
    }
}

/// The median of `field` per cell.
fn medians(rows: &[Value], field: &str) -> BTreeMap<Key, f64> {
    let mut all: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    for r in rows {
        let (Some(s), Some(c), Some(p), Some(b), Some(n), Some(v)) = (
            r["server"].as_str(),
            r["client"].as_str(),
            r["protocol"].as_str(),
            payload_name(&r["payload"]),
            r["inflight"].as_u64(),
            r[field].as_f64(),
        ) else {
            continue;
        };
        all.entry((s.into(), c.into(), p.into(), b, n))
            .or_default()
            .push(v);
    }
    all.into_iter()
        .filter_map(|(k, v)| median(v).map(|m| (k, m)))
        .collect()
}

/// One panel: per cell, two bars (`series`: name, colour, server, client).
/// With `log`, a logarithmic value axis (CPU per call spans two orders of magnitude).
/// Cell names go on `root` (the chart's coordinates are the root's).
fn panel<'a, 'b: 'a>(
    root: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    log: bool,
    values: &BTreeMap<Key, f64>,
    series: [(&'static str, RGBColor, &'static str, &'static str); 2],
) -> Result<()> {
    let cells: Vec<Cell<'_>> = PROTOCOLS
        .iter()
        .flat_map(|p| {
            PAYLOADS
                .iter()
                .flat_map(move |b| INFLIGHT.iter().map(move |n| (*p, *b, *n)))
        })
        .collect();
    let get = |server: &str, client: &str, (p, b, n): Cell<'_>| {
        values
            .get(&(server.into(), client.into(), p.into(), b.into(), n))
            .copied()
    };
    let found: Vec<f64> = cells
        .iter()
        .flat_map(|c| series.iter().filter_map(|s| get(s.2, s.3, *c)))
        .filter(|v| *v > 0.0)
        .collect();
    let max = found.iter().copied().fold(0.0, f64::max);
    let min = found.iter().copied().fold(f64::INFINITY, f64::min);
    let (floor, top) = match (log, max > 0.0) {
        (_, false) => (0.0, 1.0),
        (false, true) => (0.0, max * 1.15),
        (true, true) => (min / 2.0, max * 2.0),
    };
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(60)
        .y_label_area_size(70);
    if log {
        let mut chart =
            builder.build_cartesian_2d(0f64..cells.len() as f64, (floor..top).log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|v| format!("{v}"))
            .draw()?;
        bars(root, &mut chart, &cells, floor, &get, series)
    } else {
        let mut chart = builder.build_cartesian_2d(0f64..cells.len() as f64, floor..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        bars(root, &mut chart, &cells, floor, &get, series)
    }
}

/// The bars of one panel, its legend, and the cell names under it.
fn bars<'a, 'b: 'a, Y>(
    root: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, Y>>,
    cells: &[Cell<'_>],
    floor: f64,
    get: Lookup<'_>,
    series: [(&'static str, RGBColor, &'static str, &'static str); 2],
) -> Result<()>
where
    Y: Ranged<ValueType = f64>,
{
    for (s, (name, colour, server, client)) in series.into_iter().enumerate() {
        let x0 = 0.1 + 0.4 * s as f64;
        chart
            .draw_series(cells.iter().enumerate().filter_map(|(i, c)| {
                get(server, client, *c).map(|v| {
                    Rectangle::new(
                        [(i as f64 + x0, floor), (i as f64 + x0 + 0.4, v)],
                        colour.filled(),
                    )
                })
            }))?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    // Cell names under the axis, two lines each.
    let style =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, (p, b, n)) in cells.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, floor));
        root.draw(&Text::new(format!("{p} {b}"), (x, y + 6), style.clone()))?;
        root.draw(&Text::new(format!("x{n}"), (x, y + 22), style.clone()))?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (echo, input, output) = match args.as_slice() {
        [flag, input, output] if flag == "--echo" => (true, input, output),
        [input, output] => (false, input, output),
        _ => bail!("usage: bench-chart [--echo] RESULTS.jsonl OUT.svg"),
    };
    let text = std::fs::read_to_string(input).with_context(|| format!("cannot read {input}"))?;
    let rows: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(|| format!("{input} is not JSON lines"))?;
    if echo {
        return echo::draw(&rows, output);
    }
    let root = SVGBackend::new(output, (1500, 1150)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((3, 1));
    let servers = [
        ("Java Dubbo 3.3.6", JAVA, "java", "rubbo"),
        ("Rubbo", RUST, "rubbo", "rubbo"),
    ];
    panel(
        &root,
        &areas[0],
        "calls/s, driven by rubbo bench (one connection; median over rounds)",
        false,
        &medians(&rows, "calls_per_s"),
        servers,
    )?;
    panel(
        &root,
        &areas[1],
        "server CPU per call, µs, log scale (driven by rubbo bench)",
        true,
        &medians(&rows, "server_cpu_us_per_call"),
        servers,
    )?;
    panel(
        &root,
        &areas[2],
        "client CPU per call against Java Dubbo, µs, log scale",
        true,
        &medians(&rows, "client_cpu_us_per_call"),
        [
            ("Java Dubbo async client", JAVA, "java", "java"),
            ("rubbo bench", RUST, "java", "rubbo"),
        ],
    )?;
    root.present()?;
    Ok(())
}
