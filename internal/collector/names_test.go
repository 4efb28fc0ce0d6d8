package collector

import "testing"

func TestIsDropName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"notices.jsonl", true},
		{"notices.jsonl.gz", true},
		{"NOTICES.JSONL", true},
		{".notices.jsonl", false},
		{"notices.jsonl.part", false},
		{"notices.jsonl.tmp", false},
		{"notices.jsonl.gz.part", false},
		{"notices.json", false},
		{"notices.txt", false},
		{"notices.jsonl.errors.txt", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isDropName(tc.name); got != tc.want {
				t.Errorf("isDropName(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://feed.example/notices.jsonl", "https://feed.example/notices.jsonl"},
		{"https://user:secret@feed.example/n.jsonl", "https://feed.example/n.jsonl"},
		{"https://feed.example/n.jsonl?token=secret", "https://feed.example/n.jsonl"},
		{"/var/drop", "/var/drop"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := redact(tc.in); got != tc.want {
				t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
