CREATE TABLE "cluster_files" (
	"rowid" bigserial NOT NULL,
	"path" text PRIMARY KEY NOT NULL,
	"sealed" "bytea" NOT NULL,
	"digest" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "cluster_files_rowid_unique" UNIQUE("rowid")
);
