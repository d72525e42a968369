//! The text table Java's QoS commands print (`org.apache.dubbo.qos.textui.TTable`):
//! outer and inner borders, `+---+` separators, each column auto-sized or of a fixed
//! width that wraps, aligned left, right or in the middle.

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
    Middle,
}

/// One column: a fixed width (cells wrap) or `None` for the widest cell's width.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    width: Option<usize>,
    align: Align,
    rows: Vec<String>,
}

impl Column {
    /// An auto-sized column.
    pub(crate) fn auto(align: Align) -> Self {
        Column {
            width: None,
            align,
            rows: Vec::new(),
        }
    }

    /// A column of `width` characters; longer cells wrap.
    pub(crate) fn fixed(width: usize, align: Align) -> Self {
        Column {
            width: Some(width),
            align,
            rows: Vec::new(),
        }
    }

    fn width(&self) -> usize {
        self.width.unwrap_or_else(|| {
            self.rows
                .iter()
                .flat_map(|r| r.lines())
                .map(|l| l.chars().count())
                .max()
                .unwrap_or(0)
        })
    }
}

/// A table of columns, rendered as Java renders it (lines end with `\n`).
#[derive(Debug, Clone)]
pub(crate) struct Table {
    columns: Vec<Column>,
    padding: usize,
}

impl Table {
    pub(crate) fn new(columns: Vec<Column>) -> Self {
        Table {
            columns,
            padding: 0,
        }
    }

    /// Spaces on each side of a cell.
    pub(crate) fn padding(mut self, padding: usize) -> Self {
        self.padding = padding;
        self
    }

    /// Adds a row; missing cells are empty. Tabs become four spaces.
    pub(crate) fn add_row(&mut self, cells: &[&str]) {
        for (i, c) in self.columns.iter_mut().enumerate() {
            c.rows.push(
                cells
                    .get(i)
                    .map_or(String::new(), |s| s.replace('\t', "    ")),
            );
        }
    }

    pub(crate) fn render(&self) -> String {
        let widths: Vec<usize> = self.columns.iter().map(Column::width).collect();
        let rows = self.columns.iter().map(|c| c.rows.len()).max().unwrap_or(0);
        let line = self.separator(&widths);
        let mut out = String::new();
        for r in 0..rows {
            out.push_str(&line);
            out.push('\n');
            out.push_str(&self.row(&widths, r));
        }
        if rows > 0 {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    fn separator(&self, widths: &[usize]) -> String {
        let mut s = String::from("+");
        for w in widths.iter().filter(|w| **w > 0) {
            s.push_str(&"-".repeat(w + 2 * self.padding));
            s.push('+');
        }
        s
    }

    fn row(&self, widths: &[usize], r: usize) -> String {
        let cells: Vec<Vec<String>> = self
            .columns
            .iter()
            .zip(widths)
            .map(|(c, w)| wrap(c.rows.get(r).map_or("", String::as_str), *w))
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(0);
        let pad = " ".repeat(self.padding);
        let mut out = String::new();
        for l in 0..height {
            for (i, (c, w)) in self.columns.iter().zip(widths).enumerate() {
                let data = cells[i].get(l).map_or("", String::as_str);
                if *w > 0 {
                    out.push('|');
                    out.push_str(&pad);
                    out.push_str(&align(data, *w, c.align));
                    out.push_str(&pad);
                }
            }
            out.push_str("|\n");
        }
        out
    }
}

/// Splits `s` into its lines, each cut every `width` characters (Java's `wrap`).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    for line in s.split('\n') {
        let chars: Vec<char> = line.chars().collect();
        if width == 0 || chars.len() <= width {
            out.push(line.to_owned());
        } else {
            out.extend(chars.chunks(width).map(|c| c.iter().collect::<String>()));
        }
    }
    // Java's Scanner yields no line for an empty cell, nor for a trailing newline.
    if out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

fn align(data: &str, width: usize, align: Align) -> String {
    let len = data.chars().count();
    let diff = width.saturating_sub(len);
    match align {
        Align::Left => format!("{data}{}", " ".repeat(diff)),
        Align::Right => format!("{}{data}", " ".repeat(diff)),
        // Java puts the odd space on the left.
        Align::Middle => {
            let left = diff / 2;
            format!("{}{data}{}", " ".repeat(diff - left), " ".repeat(left))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_java_ls_table() {
        let mut t = Table::new(vec![
            Column::auto(Align::Middle),
            Column::auto(Align::Middle),
        ]);
        t.add_row(&["Provider Service Name", "PUB"]);
        t.add_row(&["org.example.Greeter:1.0.0", "memory-I(Y)"]);
        assert_eq!(
            t.render(),
            "+-------------------------+-----------+\n\
             |  Provider Service Name  |    PUB    |\n\
             +-------------------------+-----------+\n\
             |org.example.Greeter:1.0.0|memory-I(Y)|\n\
             +-------------------------+-----------+\n"
        );
    }

    #[test]
    fn fixed_columns_wrap_and_pad() {
        let mut t = Table::new(vec![
            Column::auto(Align::Right),
            Column::fixed(4, Align::Left),
        ])
        .padding(1);
        t.add_row(&["a", "abcdef"]);
        assert_eq!(
            t.render(),
            "+---+------+\n| a | abcd |\n|   | ef   |\n+---+------+\n"
        );
    }
}
