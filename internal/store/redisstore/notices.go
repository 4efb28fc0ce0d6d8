package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/notice"
)

// The notice side of the bulk screen, kept by the ingester (RecordNotices):
//
//	nidx     hash acn or abn value -> the comma-joined seqs of the notices
//	         carrying it
//	nsum     hash seq -> the notice's summary (encodeSummary): what the
//	         screen's filters and its latest_notice need
//
//	nlog     stream: one entry per recorded batch, id "<n>-0" with n from
//	         nlog:n, field "seqs" the batch's comma-joined seqs; capped at
//	         about changeLogCap entries (see screencopy.go)
//	nlog:n   the number of the last entry written to nlog
//
// A screen reads nidx and nsum with a few HMGETs of 10,000 fields each, or
// answers from the replica's in-memory copy (screencopy.go), which follows
// nsum through nlog.

// sep separates the fields of a summary (one byte); notice fields never
// hold it.
const sep = "\x1f"

// encodeSummary keeps what Screen needs of a notice: id, seq, published
// date and instant, type, code, purpose, appointment type ("\x00" for
// none), state, status, acn, abn (empty for none), company name.
func encodeSummary(n *notice.Notice) string {
	app := "\x00"
	if n.AppointmentType != nil {
		app = *n.AppointmentType
	}
	id := idents(n)
	return strings.Join([]string{n.ID, strconv.FormatInt(n.Seq, 10), n.PublishedDate, n.PublishedAt, n.NoticeType,
		n.NoticeCode, n.NoticePurpose, app, n.State, n.Status, id[0], id[1], n.CompanyName}, sep)
}

// decodeSummaryInto decodes s into n; n's pointer fields (appointment
// type, acn, abn) point into ptrs, so a caller decoding many summaries
// allocates their targets once.
func decodeSummaryInto(s string, n *notice.Notice, ptrs *[3]string) error {
	var f [13]string
	rest := s
	for i := 0; i < 12; i++ {
		j := strings.IndexByte(rest, sep[0])
		if j < 0 {
			return fmt.Errorf("redisstore: unreadable notice summary %q", s)
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	if strings.IndexByte(rest, sep[0]) >= 0 {
		return fmt.Errorf("redisstore: unreadable notice summary %q", s)
	}
	f[12] = rest
	seq, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return fmt.Errorf("redisstore: unreadable notice summary %q", s)
	}
	*n = notice.Notice{ID: f[0], Seq: seq, PublishedDate: f[2], PublishedAt: f[3], NoticeType: f[4], NoticeCode: f[5],
		NoticePurpose: f[6], State: f[8], Status: f[9], CompanyName: f[12]}
	if f[7] != "\x00" {
		ptrs[0] = f[7]
		n.AppointmentType = &ptrs[0]
	}
	if f[10] != "" {
		ptrs[1] = f[10]
		n.ACN = &ptrs[1]
	}
	if f[11] != "" {
		ptrs[2] = f[11]
		n.ABN = &ptrs[2]
	}
	return nil
}

// changeLogCap is about the most entries nlog keeps (XADD MAXLEN ~): an
// entry holds at most 500 seqs (about 4 KB), so the stream stays under
// about 40 MB even of full batches. A replica further behind than that
// reloads its copy.
const changeLogCap = 10000

// recordScript records one batch and appends its seqs to the change log in
// the same step. KEYS: nidx, nsum, nlog, nlog:n. ARGV[1]: the change
// log's cap; then groups of (seq, summary, acn, abn) with "" for a missing
// identifier.
var recordScript = redis.NewScript(`
local function has(list, seq) return string.find(',' .. list .. ',', ',' .. seq .. ',', 1, true) end
local function drop(v, seq)
  local cur = redis.call('HGET', KEYS[1], v)
  if not cur then return end
  local keep = {}
  for s in string.gmatch(cur, '[^,]+') do if s ~= seq then keep[#keep + 1] = s end end
  if #keep == 0 then redis.call('HDEL', KEYS[1], v) else redis.call('HSET', KEYS[1], v, table.concat(keep, ',')) end
end
local function add(v, seq)
  local cur = redis.call('HGET', KEYS[1], v)
  if not cur then redis.call('HSET', KEYS[1], v, seq)
  elseif not has(cur, seq) then redis.call('HSET', KEYS[1], v, cur .. ',' .. seq) end
end
local seqs = {}
for i = 2, #ARGV, 4 do
  local seq, sum, acn, abn = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local old = redis.call('HGET', KEYS[2], seq)
  if old then
    local f = {}
    for x in string.gmatch(old .. '\31', '([^\31]*)\31') do f[#f + 1] = x end
    for _, v in ipairs({f[11], f[12]}) do
      if v and v ~= '' and v ~= acn and v ~= abn then drop(v, seq) end
    end
  end
  if acn ~= '' then add(acn, seq) end
  if abn ~= '' then add(abn, seq) end
  redis.call('HSET', KEYS[2], seq, sum)
  seqs[#seqs + 1] = seq
end
local n = redis.call('INCR', KEYS[4])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[1], n .. '-0', 'seqs', table.concat(seqs, ','))
return 1
`)

// RecordNotices records new or amended notices (as stored: Seq set) in the
// screen's identifier sets, 500 a script call. Recording a notice again is
// harmless; an amended notice that changed its acn or abn leaves the old
// value's list.
func (s *Store) RecordNotices(ctx context.Context, ns []notice.Notice) error {
	for len(ns) > 0 {
		chunk := ns[:min(len(ns), 500)]
		ns = ns[len(chunk):]
		args := make([]any, 0, 1+4*len(chunk))
		args = append(args, s.changeLogCap)
		for i := range chunk {
			n := &chunk[i]
			if n.Seq <= 0 {
				return fmt.Errorf("redisstore: record notice %s: it has no notice_seq; record notices as stored", n.ID)
			}
			id := idents(n)
			args = append(args, n.Seq, encodeSummary(n), id[0], id[1])
		}
		err := recordScript.Run(ctx, s.rdb, []string{s.key("nidx"), s.key("nsum"), s.key("nlog"), s.key("nlog", "n")}, args...).Err()
		if err != nil {
			return s.fail("record notices", err)
		}
	}
	return nil
}

// idents returns a notice's acn and abn ("" when absent).
func idents(n *notice.Notice) [2]string {
	var out [2]string
	if n.ACN != nil {
		out[0] = *n.ACN
	}
	if n.ABN != nil {
		out[1] = *n.ABN
	}
	return out
}
