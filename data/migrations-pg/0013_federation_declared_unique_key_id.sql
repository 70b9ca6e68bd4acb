ALTER TABLE "federations" ADD COLUMN "psk_key_id" text;--> statement-breakpoint
CREATE INDEX "federations_psk_key_id" ON "federations" USING btree ("psk_key_id");--> statement-breakpoint
CREATE UNIQUE INDEX "federations_declared_live" ON "federations" USING btree ("declared_as") WHERE "declared_as" IS NOT NULL AND "status" IN ('WAITING', 'PAIRING', 'PAIRED');