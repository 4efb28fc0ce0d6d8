package elastic

import (
	"encoding/json"
	"strconv"

	"github.com/noticesd/noticesd/internal/notice"
)

// appendRegisterDoc appends the JSON of registerDoc{row, r.ACN, r.ABN, *r}
// to buf, byte for byte what encoding/json writes, without reflection: a
// register load encodes millions of rows on the cores Elasticsearch
// indexes them on.
func appendRegisterDoc(buf []byte, row int64, r *notice.RegisterRow) []byte {
	buf = append(buf, `{"row":`...)
	buf = strconv.AppendInt(buf, row, 10)
	buf = appendField(buf, `,"acn":`, r.ACN)
	buf = appendField(buf, `,"abn":`, r.ABN)
	buf = appendField(buf, `,"data":{"CompanyName":`, r.CompanyName)
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
	return append(buf, "}}"...)
}

func appendField(buf []byte, key, v string) []byte {
	return appendJSONString(append(buf, key...), v)
}

// appendJSONString appends s as a JSON string as encoding/json writes it:
// printable ASCII other than " \ < > & is copied as is; any other string
// is left to encoding/json (escapes, invalid UTF-8).
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
