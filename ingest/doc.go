// Package ingest loads batch files into a backend through the store seams:
// notices as JSON Lines (Notices, NoticeReader, ParseNoticeLine) and the
// ASIC company dataset (Register, RegisterReader, ParseRegisterLine).
//
// Both stream their input (plain or gzip, detected by its magic bytes),
// reject bad lines with their line numbers while the rest loads, and
// overlap parsing with writing: one goroutine reads and parses into
// batches, the caller's goroutine writes them. Notices are idempotent by
// source_id; the register is replaced as a whole, atomically.
package ingest
