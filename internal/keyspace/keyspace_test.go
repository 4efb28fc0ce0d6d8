package keyspace

import "testing"

// TestSlot: the slots CLUSTER KEYSLOT gives (values from the Redis
// cluster specification and redis-cli against a cluster node).
func TestSlot(t *testing.T) {
	for _, c := range []struct {
		key  string
		slot int
	}{
		{"123456789", 12739}, // CRC16/XMODEM check value 0x31C3
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", Slot("user1000")},
		{"foo{}{bar}", Slot("foo{}{bar}")},
		{"foo{{bar}}zap", Slot("{bar")},
		{"{ns}:acct:1", Slot("ns")},
	} {
		t.Run(c.key, func(t *testing.T) {
			if got := Slot(c.key); got != c.slot {
				t.Errorf("Slot(%q) = %d, want %d", c.key, got, c.slot)
			}
		})
	}
	if Slot("{a}:x") == Slot("{b}:x") {
		t.Error("different tags, one slot: the tag is not hashed alone")
	}
}

func TestPrefix(t *testing.T) {
	if got := Prefix("prod"); got != "{prod}:" {
		t.Errorf("Prefix = %q", got)
	}
}
