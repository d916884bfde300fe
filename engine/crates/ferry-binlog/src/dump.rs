//! The read loop: every event of every file, in order, through the transaction filter to the output.
//!
//! Output is written as it is read, so a corrupt event stops the loop with everything before it printed;
//! the caller reports the error after flushing.

use std::io::Write;
use std::path::PathBuf;

use ferry_core::binlog::event::Event;
use ferry_core::binlog::reader::{FileReader, ReadEvent};
use ferry_core::binlog::seek::after_header;
use ferry_core::binlog::BinlogError;

use crate::filter::TxnFilter;
use crate::format;

/// Why the loop stopped early.
#[derive(Debug)]
pub enum DumpError {
    /// A file could not be opened or an event could not be read; carries the file and offset.
    Binlog(BinlogError),
    /// Writing the output failed (e.g. the reader of a pipe went away).
    Output(std::io::Error),
}

/// What to read and how to print it.
pub struct Dump {
    pub files: Vec<PathBuf>,
    /// Index in `files` of the first file to read (files before it are skipped whole).
    pub first_file: usize,
    /// Where reading goes on in the first file after its header (0: from the header on).
    pub first_offset: u64,
    pub filter: TxnFilter,
    pub json: bool,
}

impl Dump {
    pub fn run(mut self, out: &mut impl Write) -> Result<(), DumpError> {
        // Verdict on the transaction being read, from its GTID event; `None` between transactions.
        let mut printing: Option<bool> = None;
        let files = std::mem::take(&mut self.files);
        for (i, path) in files[self.first_file..].iter().enumerate() {
            let mut reader = FileReader::open(path).map_err(DumpError::Binlog)?;
            if i == 0 && self.first_offset > 0 {
                // The file's header (format description, GTID list) is printed; then reading goes on at the start
                // point, past the transactions the start position has that finding it read.
                let header_end = after_header(path).map_err(DumpError::Binlog)?;
                while reader.offset() < header_end {
                    let Some(read) = reader.next() else { break };
                    if self.take(out, read.map_err(DumpError::Binlog)?, &mut printing)? {
                        return Ok(());
                    }
                }
                if reader.offset() < self.first_offset {
                    reader = FileReader::open_at(path, self.first_offset).map_err(DumpError::Binlog)?;
                }
            }
            for read in reader {
                if self.take(out, read.map_err(DumpError::Binlog)?, &mut printing)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Prints `read` when the filter lets it through; true once the filter has finished (nothing more to print).
    fn take(&mut self, out: &mut impl Write, read: ReadEvent, printing: &mut Option<bool>) -> Result<bool, DumpError> {
        let print = match &read.event {
            Event::Gtid(g) => {
                let admitted = self.filter.admit(g.gtid);
                if self.filter.finished() {
                    return Ok(true);
                }
                *printing = Some(admitted);
                admitted
            }
            Event::Rows { .. } => printing.unwrap_or(true),
            Event::Commit { .. } => printing.take().unwrap_or(true),
            _ => true,
        };
        if print {
            self.write(out, &read).map_err(DumpError::Output)?;
        }
        Ok(false)
    }

    fn write(&self, out: &mut impl Write, read: &ReadEvent) -> std::io::Result<()> {
        let line = if self.json { format::json_line(read) } else { format::text_line(read) };
        writeln!(out, "{line}")
    }
}
