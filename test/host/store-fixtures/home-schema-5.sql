-- A beta host's store at schema 5, made by agentmbx 0.6.0 (src/host/store/migrations.ts at that
-- release): two pinned peers, one message received and one reply sent, a relay pinned.
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE agents (
        name TEXT PRIMARY KEY,
        role TEXT,
        created_at INTEGER NOT NULL
      , description TEXT);
CREATE TABLE peers (
        host TEXT PRIMARY KEY,
        host_pubkey TEXT NOT NULL UNIQUE,
        owner_pubkey TEXT,
        addr TEXT NOT NULL,
        enc_pub TEXT,
        enc_sig TEXT,
        paired_at INTEGER NOT NULL,
        last_ok_at INTEGER,
        last_error TEXT
      , lan_error_at INTEGER, lan_attempt_at INTEGER);
CREATE TABLE peer_retired_keys (
        pubkey TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        retired_at INTEGER NOT NULL
      );
CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        direction TEXT NOT NULL,
        from_addr TEXT NOT NULL,
        sender_host TEXT NOT NULL,
        to_json TEXT NOT NULL,
        thread TEXT NOT NULL,
        reply_to TEXT,
        kind TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        ts TEXT NOT NULL,
        wire TEXT,
        created_at INTEGER NOT NULL
      , meta_json TEXT);
CREATE TABLE deliveries (
        msg_id TEXT NOT NULL REFERENCES messages(id),
        agent TEXT NOT NULL,
        state TEXT NOT NULL,
        note TEXT,
        receipt_seq INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (msg_id, agent)
      );
CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        item_id TEXT NOT NULL,
        msg_id TEXT,
        peer_host TEXT NOT NULL,
        wire TEXT NOT NULL,
        state TEXT NOT NULL,
        transport TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        settled_at INTEGER,
        last_error TEXT, relay_seq INTEGER, relay_epoch TEXT, relay_accept TEXT, relay_accepted_at INTEGER, relay_refused TEXT,
        UNIQUE (kind, item_id, peer_host)
      );
CREATE TABLE receipts (
        msg_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        peer_host TEXT NOT NULL,
        state TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        note TEXT,
        wire TEXT NOT NULL,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (msg_id, recipient)
      );
CREATE TABLE pair_tokens (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        token_key TEXT NOT NULL,
        state TEXT NOT NULL,
        failures INTEGER NOT NULL DEFAULT 0,
        expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
CREATE TABLE rotations (
        new_pub TEXT PRIMARY KEY,
        old_pub TEXT NOT NULL,
        host TEXT NOT NULL,
        origin TEXT NOT NULL,
        record TEXT NOT NULL,
        at INTEGER NOT NULL
      );
CREATE TABLE relay (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        url TEXT NOT NULL,
        relay_pubkey TEXT NOT NULL,
        seen_pubkey TEXT,
        state TEXT NOT NULL,
        detail TEXT,
        epoch TEXT,
        epoch_changed_at INTEGER,
        retention_ms INTEGER,
        max_batch INTEGER,
        max_pull INTEGER,
        session TEXT,
        session_host_pubkey TEXT,
        enc_ad_at INTEGER,
        enc_ad_pub TEXT,
        senders_published TEXT,
        failures INTEGER NOT NULL DEFAULT 0,
        retry_at INTEGER NOT NULL DEFAULT 0,
        set_at INTEGER NOT NULL
      , token_command TEXT, max_item_bytes INTEGER, enc_ad_v1_only INTEGER NOT NULL DEFAULT 0);
CREATE TABLE relay_position (
        relay_url TEXT NOT NULL,
        epoch TEXT NOT NULL,
        received_through INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (relay_url, epoch)
      );
CREATE TABLE relay_quarantine (
        relay_url TEXT NOT NULL,
        epoch TEXT NOT NULL,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        item_id TEXT NOT NULL,
        sender_pubkey TEXT NOT NULL,
        reason TEXT NOT NULL,
        wire_b64 TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (relay_url, epoch, seq)
      );
CREATE TABLE relay_enc_ads (
        host_pubkey TEXT PRIMARY KEY,
        enc_pub TEXT NOT NULL,
        iat_ms INTEGER NOT NULL,
        record TEXT NOT NULL
      );
CREATE VIRTUAL TABLE messages_fts USING fts5(subject, body, content = 'messages', content_rowid = 'rowid');
CREATE TABLE send_keys (
        agent TEXT NOT NULL,
        key TEXT NOT NULL,
        msg_id TEXT NOT NULL REFERENCES messages(id),
        created_at INTEGER NOT NULL,
        PRIMARY KEY (agent, key)
      );
CREATE INDEX deliveries_by_agent ON deliveries(agent, state);
CREATE INDEX outbox_due ON outbox(state, next_at);
CREATE INDEX outbox_by_msg ON outbox(msg_id);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, subject, body) VALUES (new.rowid, new.subject, new.body);
      END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, subject, body) VALUES ('delete', old.rowid, old.subject, old.body);
      END;
CREATE INDEX messages_by_thread ON messages(thread, id);
INSERT INTO meta (key, value) VALUES ('host_pubkey', 'dVOanofxh40aKDeS9vhqXiMuTynQp3LSBf2P8rPc2r0=');
INSERT INTO agents (name, role, created_at, description) VALUES ('bob', NULL, 1796212800000, 'reads the reports');
INSERT INTO peers (host, host_pubkey, owner_pubkey, addr, enc_pub, enc_sig, paired_at, last_ok_at, last_error, lan_error_at, lan_attempt_at) VALUES ('alpha', 'L4cmYAdRDVKgrcNetVD9kUak1inyvH89On5k1hQi8i4=', 'L4cmYAdRDVKgrcNetVD9kUak1inyvH89On5k1hQi8i4=', 'http://127.0.0.1:9', 'x0qWbBBZKx0vLkSlUFHPuaIlvpT5dCTicQeylHXYGkU=', 'Bafl0l8btEuTZXj5S7ojePUr3TyQ0QaJsRV9uQA+yXX6gOwCYpcTsDynBugGwBsI42Ivsaeuo3E235Y01ljbBA==', 1796212800000, NULL, NULL, NULL, NULL);
INSERT INTO messages (id, direction, from_addr, sender_host, to_json, thread, reply_to, kind, subject, body, ts, wire, created_at, meta_json) VALUES ('01M8VA0EG03SCBNH2J40G54J8A', 'in', 'ann@alpha', 'alpha', '["bob@beta"]', '01M8VA0EG03SCBNH2J40G54J8A', NULL, 'message', 'quarterly figures', 'the numbers are in the sheet', '2026-12-02T12:00:00.000Z', '{"v":3,"id":"01M8VA0EG03SCBNH2J40G54J8A","from":"ann@alpha","to":["bob@beta"],"thread":"01M8VA0EG03SCBNH2J40G54J8A","reply_to":null,"kind":"message","subject":"quarterly figures","body":"WXmXq8Lb4cJCw9ps5qAajSdcHFJ7PqScJfIb5piYTN59DGmaK5BRmyYntvg=","refs":[],"ts":"2026-12-02T12:00:00.000Z","needs_reply":false,"meta":{"mentions":[],"directives":[],"tags":[],"task_refs":[]},"authority":null,"enc":{"v":1,"alg":"x25519+xchacha20poly1305","epk":"O0bo4r0pjqGziezY/Tgfkd50Ngwpank6V+Inr/07QSo=","nonce":"MyBv9UEb8RLiTFa/fpqnbk3crQRWbgAz","body":"WXmXq8Lb4cJCw9ps5qAajSdcHFJ7PqScJfIb5piYTN59DGmaK5BRmyYntvg="},"sig":{"alg":"ed25519","host":"alpha","key":"805f-5383-d1e5-80dd","value":"1EmouxFzdrol2Cs/BrkGZZsbU8RHuFcbpByzoEiL1cuVG1rqnOSn/vePNk3v0iK2GJv6AsASRlcPssaz3oiKAw=="}}', 1796212801000, '{"mentions":[],"directives":[],"tags":[],"task_refs":[]}');
INSERT INTO messages (id, direction, from_addr, sender_host, to_json, thread, reply_to, kind, subject, body, ts, wire, created_at, meta_json) VALUES ('01M8VA0GEG4S9YAD2Y4S8THNXC', 'out', 'bob@beta', 'beta', '["ann@alpha"]', '01M8VA0EG03SCBNH2J40G54J8A', '01M8VA0EG03SCBNH2J40G54J8A', 'message', 're: quarterly figures', 'thanks, read them', '2026-12-02T12:00:02.000Z', NULL, 1796212802000, '{"mentions":[],"directives":[],"tags":[],"task_refs":[]}');
INSERT INTO deliveries (msg_id, agent, state, note, receipt_seq, updated_at) VALUES ('01M8VA0EG03SCBNH2J40G54J8A', 'bob', 'delivered', NULL, 1, 1796212801000);
INSERT INTO outbox (id, kind, item_id, msg_id, peer_host, wire, state, transport, attempts, next_at, created_at, settled_at, last_error, relay_seq, relay_epoch, relay_accept, relay_accepted_at, relay_refused) VALUES (1, 'receipt', 'receipt:01M8VA0EG03SCBNH2J40G54J8A:bob@beta:1', '01M8VA0EG03SCBNH2J40G54J8A', 'alpha', '{"rec":{"at":"2026-12-02T12:00:01.000Z","msg":"01M8VA0EG03SCBNH2J40G54J8A","recipient":"bob@beta","seq":1,"state":"delivered","type":"receipt","v":1},"sig":"LKSrd39/Jjd9ZEfweKLMR5ornKvijZyT6eKlqjq6I/0DGC5vEkEsDxmc016BdutjfNuPzeIgvrzLBmgWC5DuCw=="}', 'queued', NULL, 0, 1796212801000, 1796212801000, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO outbox (id, kind, item_id, msg_id, peer_host, wire, state, transport, attempts, next_at, created_at, settled_at, last_error, relay_seq, relay_epoch, relay_accept, relay_accepted_at, relay_refused) VALUES (2, 'envelope', '01M8VA0GEG4S9YAD2Y4S8THNXC', '01M8VA0GEG4S9YAD2Y4S8THNXC', 'alpha', '{"v":3,"id":"01M8VA0GEG4S9YAD2Y4S8THNXC","from":"bob@beta","to":["ann@alpha"],"thread":"01M8VA0EG03SCBNH2J40G54J8A","reply_to":"01M8VA0EG03SCBNH2J40G54J8A","kind":"message","subject":"re: quarterly figures","body":"v6khHKRmqPZRuu5dG5BIDNOESwHWSHWz6wyjEKqzbTlZ","refs":[],"ts":"2026-12-02T12:00:02.000Z","needs_reply":false,"meta":{"mentions":[],"directives":[],"tags":[],"task_refs":[]},"authority":null,"enc":{"v":1,"alg":"x25519+xchacha20poly1305","epk":"ybYGbGt/APtGTk2f9vxWHBZGq5BbP/8hEMyIhU7jIRk=","nonce":"OS7r3MBRRYFPzmwkXK4bOW42JagW6CTN","body":"v6khHKRmqPZRuu5dG5BIDNOESwHWSHWz6wyjEKqzbTlZ"},"sig":{"alg":"ed25519","host":"beta","key":"8f98-ea6e-b85c-508e","value":"PjMYJmURtpmtuV4IGn9eeCC+Ibe6g410NO11W6Z00sS4r8utx8dL+aKt0aaBU+WJN68iUfLgUUWxDAHtSF3nDQ=="}}', 'queued', NULL, 0, 1796212802000, 1796212802000, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO relay (id, url, relay_pubkey, seen_pubkey, state, detail, epoch, epoch_changed_at, retention_ms, max_batch, max_pull, session, session_host_pubkey, enc_ad_at, enc_ad_pub, senders_published, failures, retry_at, set_at, token_command, max_item_bytes, enc_ad_v1_only) VALUES (1, 'https://relay.example', 'cmVsYXkta2V5LWZvci10aGUtZml4dHVyZS0wMDAwMDAwMDA', NULL, 'ok', NULL, 'epoch-1', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 1796212802000, NULL, NULL, 0);
INSERT INTO relay_position (relay_url, epoch, received_through, updated_at) VALUES ('https://relay.example', 'epoch-1', 42, 1796212802000);
INSERT INTO send_keys (agent, key, msg_id, created_at) VALUES ('bob', 'key-1', '01M8VA0GEG4S9YAD2Y4S8THNXC', 1796212802000);
PRAGMA user_version = 5;
