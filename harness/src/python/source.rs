//! Positions in the workload source, mapped back into the scenario file.

use crate::error::Location;
use crate::scenario::Workload;

/// Byte offsets of line starts in the workload, to turn parser offsets into lines/columns.
pub struct SourceMap<'a> {
    source: &'a str,
    line_starts: Vec<u32>,
    /// The scenario-file line of every byte offset (one more entry for the end), built once
    /// so that the line of each statement run is an index, not a search (a workload is a
    /// few kilobytes: four bytes per source byte).
    file_lines: Vec<u32>,
    file: String,
    workload: &'a Workload,
}

impl<'a> SourceMap<'a> {
    pub fn new(workload: &'a Workload, file: &str) -> Self {
        let source = workload.source.as_str();
        let mut line_starts = vec![0u32];
        line_starts.extend(source.match_indices('\n').map(|(i, _)| i as u32 + 1));
        let mut file_lines = Vec::with_capacity(source.len() + 1);
        let mut line = workload.file_position(1, 1).0;
        for b in source.bytes() {
            file_lines.push(line);
            line += u32::from(b == b'\n');
        }
        file_lines.push(line);
        SourceMap {
            source,
            line_starts,
            file_lines,
            file: file.to_string(),
            workload,
        }
    }

    /// 1-based line in the workload of a byte offset.
    pub fn workload_line(&self, offset: u32) -> u32 {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }

    /// Line in the scenario file of a byte offset in the workload.
    #[inline]
    pub fn file_line(&self, offset: u32) -> u32 {
        match self.file_lines.get(offset as usize) {
            Some(&line) => line,
            None => self.workload.file_position(self.workload_line(offset), 1).0,
        }
    }

    /// File, line and column (in characters) of a byte offset in the workload.
    pub fn location(&self, offset: u32) -> Location {
        let line = self.workload_line(offset);
        let start = self.line_starts[line as usize - 1] as usize;
        let end = (offset as usize).min(self.source.len()).max(start);
        let column = self.source.get(start..end).map_or(0, |s| s.chars().count()) as u32 + 1;
        let (file_line, file_column) = self.workload.file_position(line, column);
        Location::new(self.file.clone(), file_line, file_column)
    }

    pub fn file(&self) -> &str {
        &self.file
    }
}
