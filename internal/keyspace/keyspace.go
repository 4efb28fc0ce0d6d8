// Package keyspace makes the prefix every Redis key of a namespace starts
// with: "{<namespace>}:". The braces are a Redis Cluster hash tag, so all
// the keys of one namespace hash to one slot and a Lua script may touch
// any of them on a cluster (docs/redis.md). The publish log, the Redis
// store, the leases and the limiter all build their keys on Prefix.
package keyspace

import "strings"

// Prefix returns the prefix of namespace ns's keys: "{ns}:".
func Prefix(ns string) string { return "{" + ns + "}:" }

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
