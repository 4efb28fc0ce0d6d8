-- 0011: a full-text index of the register's company names, for the company
-- name search (GET /v1/companies?name=). Contentless: the names stay in
-- register, whose rowid (the row's position in the file) is the index's
-- rowid. A register load builds a new one beside its new table and swaps
-- both in at commit (register.go).
CREATE VIRTUAL TABLE register_fts USING fts5 (
    company_name,
    content = '',
    tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO register_fts (rowid, company_name) SELECT rowid, company_name FROM register;
