//! `bench-chart --echo echo.jsonl OUT.svg`: the chart of the echo bench
//! (`cargo bench -p rubbo-bench --bench echo` with `RUBBO_BENCH_OUT`). Per cell (payload
//! x in flight), the figures the bench's tables report (the dubbo section: each system's
//! round with the best req/s; Triple: the median over rounds): req/s and
//! CPU per call (client and server together) of the dubbo section's systems (raw TCP,
//! tonic, Rubbo, and the Java cells); req/s of the Triple section's pairs (Java cells
//! included); then the server's CPU per call where it was measured apart from the
//! client (the Java cells of both protocols, and the Triple servers under the plain
//! HTTP/2 client).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

/// (section, system, size, in flight)
type Key = (String, String, u64, u64);
/// (size, in flight)
type Cell = (u64, u64);

/// A series: its legend, colour, section, system and field.
struct Series {
    name: &'static str,
    colour: RGBColor,
    section: &'static str,
    system: &'static str,
    field: &'static str,
}

const fn series(
    name: &'static str,
    colour: RGBColor,
    section: &'static str,
    system: &'static str,
    field: &'static str,
) -> Series {
    Series {
        name,
        colour,
        section,
        system,
        field,
    }
}

const RAW: RGBColor = RGBColor(0x80, 0x80, 0x80);
const TONIC: RGBColor = RGBColor(0x2a, 0x9d, 0x8f);
const RUBBO: RGBColor = RGBColor(0x1f, 0x5f, 0xa8);
const RUBBO_JAVA: RGBColor = RGBColor(0x8a, 0xb6, 0xe8);
const JAVA_RUBBO: RGBColor = RGBColor(0x7b, 0x3f, 0xa0);
const JAVA: RGBColor = RGBColor(0xd6, 0x5f, 0x00);
const JAVA_LIGHT: RGBColor = RGBColor(0xf4, 0xa2, 0x61);
const JAVA_DARK: RGBColor = RGBColor(0x9c, 0x3d, 0x00);
const RUBBO_TONIC: RGBColor = RGBColor(0x5e, 0x81, 0xc9);
const TONIC_TONIC: RGBColor = RGBColor(0x8f, 0xd1, 0xc6);

/// The dubbo section's systems, for a field.
fn dubbo_series(field: &'static str) -> Vec<Series> {
    vec![
        series("raw TCP (same process)", RAW, "dubbo", "raw", field),
        series("tonic (same process)", TONIC, "dubbo", "tonic", field),
        series(
            "Rubbo → Rubbo (same process)",
            RUBBO,
            "dubbo",
            "rubbo",
            field,
        ),
        series(
            "Rubbo → Java Dubbo",
            RUBBO_JAVA,
            "dubbo",
            "rubbo-java",
            field,
        ),
        series(
            "Java client → Rubbo",
            JAVA_RUBBO,
            "dubbo",
            "java-rubbo",
            field,
        ),
        series(
            "Java client → Java Dubbo",
            JAVA,
            "dubbo",
            "java-java",
            field,
        ),
    ]
}

/// Every run with a result, per (section, system, cell).
fn runs(rows: &[Value]) -> BTreeMap<Key, Vec<&Value>> {
    let mut all: BTreeMap<Key, Vec<&Value>> = BTreeMap::new();
    for r in rows {
        let (Some(section), Some(system), Some(size), Some(n), Some(_)) = (
            r["section"].as_str(),
            r["system"].as_str(),
            r["size"].as_u64(),
            r["inflight"].as_u64(),
            r["calls_per_s"].as_f64(),
        ) else {
            continue;
        };
        all.entry((section.to_owned(), system.to_owned(), size, n))
            .or_default()
            .push(r);
    }
    all
}

/// A cell's figure as the bench's tables give it: the dubbo section keeps each
/// system's best round (highest req/s), the Triple section the median over rounds.
fn figure(runs: &[&Value], section: &str, field: &str) -> Option<f64> {
    if section == "dubbo" {
        let best = runs.iter().max_by(|a, b| {
            let rate = |r: &Value| r["calls_per_s"].as_f64().unwrap_or(0.0);
            rate(a).total_cmp(&rate(b))
        })?;
        return best[field].as_f64();
    }
    let mut v: Vec<f64> = runs.iter().filter_map(|r| r[field].as_f64()).collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

fn payload(size: u64) -> String {
    if size >= 1024 && size % 1024 == 0 {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

/// One panel on a log scale: per cell, one bar per series that has a value.
fn panel<'b>(
    root: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    area: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    cells: &[Cell],
    runs: &BTreeMap<Key, Vec<&Value>>,
    series: &[Series],
) -> Result<()> {
    let get = |s: &Series, (size, n): Cell| {
        runs.get(&(s.section.to_owned(), s.system.to_owned(), size, n))
            .and_then(|r| figure(r, s.section, s.field))
            .filter(|v| *v > 0.0)
    };
    let found: Vec<f64> = cells
        .iter()
        .flat_map(|c| series.iter().filter_map(move |s| get(s, *c)))
        .collect();
    let max = found.iter().copied().fold(0.0, f64::max);
    let min = found.iter().copied().fold(f64::INFINITY, f64::min);
    let (floor, top) = if max > 0.0 {
        // Headroom above the bars for the legend.
        (min / 2.0, max * 60.0)
    } else {
        (0.1, 1.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..cells.len() as f64, (floor..top).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_label_formatter(&|v| {
            if *v >= 1e6 {
                format!("{:.0} M", v / 1e6)
            } else if *v >= 1e3 {
                format!("{:.0} k", v / 1e3)
            } else {
                format!("{v}")
            }
        })
        .draw()?;
    bars(root, &mut chart, cells, floor, &get, series)
}

fn bars<'a, 'b: 'a, Y>(
    root: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, Y>>,
    cells: &[Cell],
    floor: f64,
    get: &dyn Fn(&Series, Cell) -> Option<f64>,
    series: &[Series],
) -> Result<()>
where
    Y: Ranged<ValueType = f64>,
{
    let width = 0.8 / series.len() as f64;
    for (k, s) in series.iter().enumerate() {
        let x0 = 0.1 + width * k as f64;
        let colour = s.colour;
        chart
            .draw_series(cells.iter().enumerate().filter_map(|(i, c)| {
                get(s, *c).map(|v| {
                    Rectangle::new(
                        [(i as f64 + x0, floor), (i as f64 + x0 + width, v)],
                        colour.filled(),
                    )
                })
            }))?
            .label(s.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    let style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, (size, n)) in cells.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, floor));
        root.draw(&Text::new(
            format!("{} x{n}", payload(*size)),
            (x, y + 8),
            style.clone(),
        ))?;
    }
    Ok(())
}

/// The Triple section's pairs, for a field.
fn triple_series(field: &'static str) -> Vec<Series> {
    vec![
        series("h2 → Rubbo (IDL)", RUBBO, "triple", "h2-rubbo", field),
        series("h2 → tonic", TONIC, "triple", "h2-tonic", field),
        series(
            "Rubbo (IDL) → tonic",
            RUBBO_TONIC,
            "triple",
            "rubbo-tonic",
            field,
        ),
        series("tonic → tonic", TONIC_TONIC, "triple", "tonic-tonic", field),
        series(
            "Rubbo → Java Dubbo (wrapper)",
            RUBBO_JAVA,
            "triple",
            "rubbo-java",
            field,
        ),
        series(
            "Java client → Rubbo (wrapper)",
            JAVA_RUBBO,
            "triple",
            "java-rubbo",
            field,
        ),
        series(
            "Java client → Java Dubbo",
            JAVA,
            "triple",
            "java-java",
            field,
        ),
    ]
}

/// Draws `output` from the echo bench's JSON lines.
pub(crate) fn draw(rows: &[Value], output: &str) -> Result<()> {
    let runs = runs(rows);
    let mut cells: Vec<Cell> = runs.keys().map(|(_, _, size, n)| (*size, *n)).collect();
    cells.sort_unstable();
    cells.dedup();
    anyhow::ensure!(!cells.is_empty(), "no cell with a result in the input");
    let root = SVGBackend::new(output, (1500, 1500)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((4, 1));
    let server = "server_cpu_us_per_call";
    let panels = [
        (
            "dubbo: req/s, one connection (best round; log scale)",
            dubbo_series("calls_per_s"),
        ),
        (
            "dubbo: CPU per call, client + server, µs (best round; log scale)",
            dubbo_series("cpu_us_per_call"),
        ),
        (
            "Triple: req/s, one HTTP/2 connection (median over rounds; log scale)",
            triple_series("calls_per_s"),
        ),
        (
            "server CPU per call, µs, measured apart from the client (log scale)",
            vec![
                series(
                    "dubbo: Rubbo, Java client",
                    RUBBO,
                    "dubbo",
                    "java-rubbo",
                    server,
                ),
                series(
                    "dubbo: Java, Java client",
                    JAVA,
                    "dubbo",
                    "java-java",
                    server,
                ),
                series(
                    "dubbo: Java, Rubbo client",
                    JAVA_LIGHT,
                    "dubbo",
                    "rubbo-java",
                    server,
                ),
                series(
                    "Triple: Rubbo (IDL), h2 client",
                    RUBBO_TONIC,
                    "triple",
                    "h2-rubbo",
                    server,
                ),
                series(
                    "Triple: tonic, h2 client",
                    TONIC,
                    "triple",
                    "h2-tonic",
                    server,
                ),
                series(
                    "Triple: Rubbo (wrapper), Java client",
                    JAVA_RUBBO,
                    "triple",
                    "java-rubbo",
                    server,
                ),
                series(
                    "Triple: Java, Java client",
                    JAVA_DARK,
                    "triple",
                    "java-java",
                    server,
                ),
                series(
                    "Triple: Java, Rubbo client",
                    RUBBO_JAVA,
                    "triple",
                    "rubbo-java",
                    server,
                ),
            ],
        ),
    ];
    for (area, (title, series)) in areas.iter().zip(panels) {
        panel(&root, area, title, &cells, &runs, &series)?;
    }
    root.present().context("cannot write the SVG")?;
    Ok(())
}
