CREATE TABLE "login_throttle" (
	"rowid" bigserial NOT NULL,
	"key" text PRIMARY KEY NOT NULL,
	"tokens" double precision NOT NULL,
	"at_ms" bigint NOT NULL,
	"level_before" double precision NOT NULL,
	CONSTRAINT "login_throttle_rowid_unique" UNIQUE("rowid")
);
