package elastic

import (
	"strconv"

	"github.com/noticesd/noticesd/internal/jsontext"
	"github.com/noticesd/noticesd/internal/notice"
)

// appendRegisterBlock appends the JSON of a register block (registerBlock)
// holding rows, the first of which is row first of the file, to buf, byte
// for byte what encoding/json writes for it, without reflection: a
// register load encodes millions of rows on the cores Elasticsearch
// indexes them on. An empty ACN or ABN is left out of acn and abn (no read
// looks one up).
func appendRegisterBlock(buf []byte, first int64, rows []notice.RegisterRow) []byte {
	buf = append(buf, `{"row":`...)
	buf = strconv.AppendInt(buf, first, 10)
	buf = append(buf, `,"rows":`...)
	buf = strconv.AppendInt(buf, int64(len(rows)), 10)
	buf = appendIdents(append(buf, `,"acn":[`...), rows, func(r *notice.RegisterRow) string { return r.ACN })
	buf = appendIdents(append(buf, `],"abn":[`...), rows, func(r *notice.RegisterRow) string { return r.ABN })
	buf = append(buf, `],"data":[`...)
	for i := range rows {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendRegisterRow(buf, &rows[i])
	}
	return append(buf, "]}"...)
}

// appendIdents appends the non-empty idents of rows as JSON strings, comma
// separated.
func appendIdents(buf []byte, rows []notice.RegisterRow, ident func(*notice.RegisterRow) string) []byte {
	n := 0
	for i := range rows {
		if v := ident(&rows[i]); v != "" {
			if n > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, v)
			n++
		}
	}
	return buf
}

// appendRegisterRow appends the JSON of r as encoding/json writes it.
func appendRegisterRow(buf []byte, r *notice.RegisterRow) []byte {
	buf = appendField(buf, `{"CompanyName":`, r.CompanyName)
	buf = appendField(buf, `,"ACN":`, r.ACN)
	buf = appendField(buf, `,"Type":`, r.Type)
	buf = appendField(buf, `,"Class":`, r.Class)
	buf = appendField(buf, `,"SubClass":`, r.SubClass)
	buf = appendField(buf, `,"Status":`, r.Status)
	buf = appendField(buf, `,"RegisteredOn":`, r.RegisteredOn)
	buf = appendField(buf, `,"DeregisteredOn":`, r.DeregisteredOn)
	buf = appendField(buf, `,"PreviousState":`, r.PreviousState)
	buf = appendField(buf, `,"StateRegistrationNumber":`, r.StateRegistrationNumber)
	buf = appendField(buf, `,"ModifiedSinceLastReport":`, r.ModifiedSinceLastReport)
	buf = appendField(buf, `,"CurrentNameIndicator":`, r.CurrentNameIndicator)
	buf = appendField(buf, `,"ABN":`, r.ABN)
	buf = appendField(buf, `,"CurrentName":`, r.CurrentName)
	buf = appendField(buf, `,"CurrentNameStart":`, r.CurrentNameStart)
	return append(buf, '}')
}

func appendField(buf []byte, key, v string) []byte {
	return appendJSONString(append(buf, key...), v)
}

// appendJSONString appends s as a JSON string byte for byte as
// json.Marshal writes it (jsontext.AppendString, HTML escaping on). Notice
// texts hold quotes and ampersands often enough that handing such strings
// to encoding/json cost a tenth of an ingest's client CPU
// (docs/benchmarks.md, 2026-11-24).
func appendJSONString(buf []byte, s string) []byte {
	return jsontext.AppendString(buf, s, true)
}
