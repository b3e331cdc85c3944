// unipi-tui patch: settable tab stops (HTS, TBC, CHT, CBT). Upstream moved
// to every eighth column and could not set or clear a stop.

/// One flag per column; a new column starts with a stop every eight columns,
/// as in xterm.
#[derive(Clone, Debug)]
pub struct TabStops {
    stops: alloc::vec::Vec<bool>,
}

impl TabStops {
    pub fn new(cols: u16) -> Self {
        let mut tabs = Self {
            stops: alloc::vec::Vec::new(),
        };
        tabs.resize(cols);
        tabs
    }

    /// Keeps the stops the program set in the columns that remain, and gives
    /// new columns the default stops.
    pub fn resize(&mut self, cols: u16) {
        let old = self.stops.len();
        self.stops.truncate(usize::from(cols));
        self.stops.extend(
            (old..usize::from(cols)).map(|col| col % 8 == 0 && col > 0),
        );
    }

    pub fn set(&mut self, col: u16) {
        let last = self.stops.len().saturating_sub(1);
        if let Some(stop) = self.stops.get_mut(usize::from(col).min(last)) {
            *stop = true;
        }
    }

    pub fn clear(&mut self, col: u16) {
        if let Some(stop) = self.stops.get_mut(usize::from(col)) {
            *stop = false;
        }
    }

    pub fn clear_all(&mut self) {
        self.stops.fill(false);
    }

    /// The first stop after `col`, or the last column when there is none.
    pub fn next(&self, col: u16) -> u16 {
        let last = self.last_col();
        (col.saturating_add(1)..=last)
            .find(|&c| self.stops[usize::from(c)])
            .unwrap_or(last)
    }

    /// The last stop before `col`, or the first column when there is none.
    pub fn previous(&self, col: u16) -> u16 {
        (0..col.min(self.last_col()))
            .rev()
            .find(|&c| self.stops[usize::from(c)])
            .unwrap_or(0)
    }

    fn last_col(&self) -> u16 {
        // The screen has at least one column and at most u16::MAX.
        u16::try_from(self.stops.len().saturating_sub(1)).unwrap_or(u16::MAX)
    }
}
