// Package keyspace makes the prefixes Redis keys of a namespace start
// with. The braces are Redis Cluster hash tags: what is shared by the whole
// namespace (the publish log, the writer lease, indexes) is under
// "{<namespace>}:" (Prefix), in one slot; what one account owns is under
// "{<namespace>:a:<account>}:" (Account), in its account's slot, so
// accounts spread over a cluster's masters and a Lua script may touch any
// key of one account (docs/redis.md, "Key layout").
package keyspace

import (
	"strconv"
	"strings"
)

// Prefix returns the prefix of namespace ns's keys: "{ns}:".
func Prefix(ns string) string { return "{" + ns + "}:" }

// Account returns the prefix of the keys account owns in namespace ns:
// "{ns:a:account}:", a hash tag of its own.
func Account(ns, account string) string { return "{" + ns + ":a:" + account + "}:" }

// Group returns the prefix of group g of a key family spread over slots
// by its members (the register's identifier sets): "{ns:g<g>}:".
func Group(ns string, g int) string { return "{" + ns + ":g" + strconv.Itoa(g) + "}:" }

// OldPrefix returns the prefix the keys of namespace ns had before they
// were tagged: "ns:". Only the upgrade of a namespace reads it.
func OldPrefix(ns string) string { return ns + ":" }

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of its
// hash tag (the part between the first '{' and the next '}', when not
// empty) or of the whole key, modulo 16384, as CLUSTER KEYSLOT computes it.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
