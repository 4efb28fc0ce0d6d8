package ingest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"lf", "a\nb\n", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"no final newline", "a\nb", []string{"a", "b"}},
		{"blank lines are lines", "a\n\nb\n", []string{"a", "", "b"}},
		{"bom only on the first line", "\ufeffa\n\ufeffb\n", []string{"a", "\ufeffb"}},
		{"line longer than the buffer", strings.Repeat("x", 3*readBufferBytes+5) + "\nb\n", []string{strings.Repeat("x", 3*readBufferBytes+5), "b"}},
		{"long last line without newline", "a\n" + strings.Repeat("y", readBufferBytes+1), []string{"a", strings.Repeat("y", readBufferBytes+1)}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(strings.NewReader(tt.input))
			var got []string
			for {
				line, tooLong, err := lr.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil || tooLong {
					t.Fatalf("next: %v, tooLong %v", err, tooLong)
				}
				got = append(got, string(line))
				if lr.line() != len(got) {
					t.Fatalf("line() = %d after %d lines", lr.line(), len(got))
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d lines, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d: %.40q, want %.40q", i+1, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestLineReaderTooLong(t *testing.T) {
	tests := []struct {
		name  string
		input string
	}{
		{"with newline", strings.Repeat("x", MaxLineBytes+1) + "\nnext\n"},
		{"exactly at a buffer boundary", strings.Repeat("x", MaxLineBytes+readBufferBytes) + "\nnext\n"},
		{"last line", "next\n" + strings.Repeat("x", MaxLineBytes+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(strings.NewReader(tt.input))
			var long, short int
			for {
				line, tooLong, err := lr.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if tooLong {
					long++
				} else if string(line) == "next" {
					short++
				} else {
					t.Fatalf("unexpected line of %d bytes", len(line))
				}
			}
			if long != 1 || short != 1 || lr.line() != 2 {
				t.Errorf("long %d short %d lines %d; want 1, 1, 2", long, short, lr.line())
			}
		})
	}
}

func TestDecompressRefusesZip(t *testing.T) {
	_, err := Decompress(strings.NewReader("PK\x03\x04rest of a zip"))
	if err == nil || !strings.Contains(err.Error(), "unzip it") {
		t.Fatalf("got %v, want an error saying to unzip", err)
	}
}

func TestInputSizes(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(a, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		paths []string
		want  int64
		err   string
	}{
		{"one file", []string{a}, 5, ""},
		{"twice", []string{a, a}, 10, ""},
		{"stdin has no size", []string{a, "-"}, -1, ""},
		{"missing file", []string{a, filepath.Join(dir, "nope.jsonl")}, 0, "cannot read " + filepath.Join(dir, "nope.jsonl")},
		{"directory", []string{dir}, 0, dir + " is a directory"},
		{"stdin twice", []string{"-", "-"}, 0, "can be given only once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := inputSizes(tt.paths)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want error containing %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}
