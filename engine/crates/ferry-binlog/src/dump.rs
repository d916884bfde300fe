//! The read loop: every event of every file, in order, through the transaction filter to the output.
//!
//! Output is written as it is read, so a corrupt event stops the loop with everything before it printed;
//! the caller reports the error after flushing.

use std::io::Write;
use std::path::PathBuf;

use ferry_core::binlog::event::Event;
use ferry_core::binlog::reader::{FileReader, ReadEvent};
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
    pub filter: TxnFilter,
    pub json: bool,
}

impl Dump {
    pub fn run(mut self, out: &mut impl Write) -> Result<(), DumpError> {
        // Verdict on the transaction being read, from its GTID event; `None` between transactions.
        let mut printing: Option<bool> = None;
        for path in &self.files[self.first_file..] {
            for read in FileReader::open(path).map_err(DumpError::Binlog)? {
                let read = read.map_err(DumpError::Binlog)?;
                let print = match &read.event {
                    Event::Gtid(g) => {
                        let admitted = self.filter.admit(g.gtid);
                        if self.filter.finished() {
                            return Ok(());
                        }
                        printing = Some(admitted);
                        admitted
                    }
                    Event::Rows { .. } => printing.unwrap_or(true),
                    Event::Commit { .. } => printing.take().unwrap_or(true),
                    _ => true,
                };
                if print {
                    self.write(out, &read).map_err(DumpError::Output)?;
                }
            }
        }
        Ok(())
    }

    fn write(&self, out: &mut impl Write, read: &ReadEvent) -> std::io::Result<()> {
        let line = if self.json { format::json_line(read) } else { format::text_line(read) };
        writeln!(out, "{line}")
    }
}
