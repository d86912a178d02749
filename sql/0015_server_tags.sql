-- Server tags (2.26+): short labels a user puts on a server, and can list servers by.
ALTER TABLE instances ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
