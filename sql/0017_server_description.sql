-- A server's free-text description (2.19+), set at boot or by PUT /servers/{id}.
ALTER TABLE instances ADD COLUMN description text;
