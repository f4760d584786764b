"""Handwritten JSON Schemas (HANDWRITTEN) and the schemas the engine must refuse (REFUSED) for the corpus."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AnyUrl, BaseModel, Field, HttpUrl, conint, conlist, constr
from structured_corpus_pydantic import BankTransaction

# ---------------------------------------------------------------------------------------------
# Handwritten schemas, in the style of public collections
# ---------------------------------------------------------------------------------------------

GEO_POSITION = {"type": "array", "prefixItems": [{"type": "number", "minimum": -180, "maximum": 180},
                                                 {"type": "number", "minimum": -90, "maximum": 90}],
                "items": False, "minItems": 2, "maxItems": 2}
GEO_POINT = {"type": "object", "properties": {"type": {"const": "Point"}, "coordinates": GEO_POSITION},
             "required": ["type", "coordinates"], "additionalProperties": False}

HANDWRITTEN: list[tuple[str, dict]] = [
    # JSON Schema Store-like configuration files (trimmed)
    ("store_package_json", {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "package.json (subset)",
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^(@[a-z0-9-]{1,10}/)?[a-z0-9-]{1,20}$"},
            "version": {"type": "string", "pattern": "^[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}$"},
            "private": {"type": "boolean"},
            "license": {"enum": ["MIT", "Apache-2.0", "BSD-3-Clause", "ISC"]},
            "scripts": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 30},
                        "maxProperties": 3},
            "dependencies": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^\\^[0-9]\\.[0-9]\\.[0-9]$"}},
        },
        "required": ["name", "version"], "additionalProperties": False}),
    ("store_tsconfig", {
        "title": "tsconfig.json (subset)", "type": "object",
        "properties": {
            "compilerOptions": {"type": "object", "properties": {
                "target": {"enum": ["es5", "es2015", "es2020", "esnext"]},
                "module": {"enum": ["commonjs", "esnext", "node16"]},
                "strict": {"type": "boolean"},
                "outDir": {"type": "string", "maxLength": 20},
                "lib": {"type": "array", "items": {"enum": ["dom", "es2020", "esnext"]}, "maxItems": 2}},
                "additionalProperties": False},
            "include": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 2}},
        "required": ["compilerOptions"], "additionalProperties": False}),
    ("store_eslintrc", {
        "title": ".eslintrc (subset)", "type": "object",
        "properties": {
            "root": {"type": "boolean"},
            "env": {"type": "object", "properties": {"browser": {"type": "boolean"}, "node": {"type": "boolean"}},
                    "additionalProperties": False},
            "extends": {"anyOf": [{"type": "string", "maxLength": 24},
                                  {"type": "array", "items": {"type": "string", "maxLength": 24}, "maxItems": 2}]},
            "rules": {"type": "object", "additionalProperties": {
                "anyOf": [{"enum": ["off", "warn", "error"]}, {"enum": [0, 1, 2]}]}}},
        "required": ["rules"], "additionalProperties": False}),
    ("store_github_workflow", {
        "title": "GitHub workflow (subset)", "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "on": {"type": "array", "items": {"enum": ["push", "pull_request", "workflow_dispatch"]},
                   "minItems": 1, "maxItems": 2},
            "jobs": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {
                "type": "object",
                "properties": {"runs-on": {"enum": ["ubuntu-latest", "macos-latest", "windows-latest"]},
                               "steps": {"type": "array", "minItems": 1, "maxItems": 2, "items": {
                                   "type": "object",
                                   "properties": {"uses": {"type": "string", "pattern": "^[a-z-]+/[a-z-]+@v[0-9]$"},
                                                  "run": {"type": "string", "maxLength": 30}},
                                   "additionalProperties": False}}},
                "required": ["runs-on", "steps"], "additionalProperties": False}}},
        "required": ["on", "jobs"], "additionalProperties": False}),
    ("store_docker_compose", {
        "title": "docker-compose (subset)", "type": "object",
        "properties": {
            "version": {"enum": ["3.8", "3.9"]},
            "services": {"type": "object", "maxProperties": 2, "propertyNames": {"pattern": "^[a-z][a-z0-9_-]{0,10}$"},
                         "additionalProperties": {
                "type": "object",
                "properties": {"image": {"type": "string", "pattern": "^[a-z0-9]+(:[a-z0-9.]+)?$"},
                               "ports": {"type": "array", "items": {"type": "string", "pattern": "^[0-9]{2,5}:[0-9]{2,5}$"},
                                         "maxItems": 2},
                               "restart": {"enum": ["no", "always", "on-failure", "unless-stopped"]}},
                "required": ["image"], "additionalProperties": False}}},
        "required": ["services"], "additionalProperties": False}),
    ("store_prettierrc", {
        "title": ".prettierrc", "type": "object",
        "properties": {"printWidth": {"type": "integer", "minimum": 40, "maximum": 200},
                       "tabWidth": {"type": "integer", "minimum": 1, "maximum": 8},
                       "useTabs": {"type": "boolean"}, "semi": {"type": "boolean"},
                       "singleQuote": {"type": "boolean"},
                       "trailingComma": {"enum": ["none", "es5", "all"]},
                       "endOfLine": {"enum": ["lf", "crlf", "cr", "auto"]}},
        "additionalProperties": False}),
    ("store_renovate", {
        "title": "renovate.json (subset)", "type": "object",
        "properties": {"extends": {"type": "array", "items": {"enum": ["config:base", "config:recommended", ":semanticCommits"]},
                                   "minItems": 1, "maxItems": 2},
                       "schedule": {"type": "array", "items": {"type": "string", "maxLength": 24}, "maxItems": 1},
                       "automerge": {"type": "boolean"},
                       "packageRules": {"type": "array", "maxItems": 2, "items": {
                           "type": "object",
                           "properties": {"matchPackageNames": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 2},
                                          "automerge": {"type": "boolean"}},
                           "additionalProperties": False}}},
        "additionalProperties": False}),
    ("store_web_manifest", {
        "title": "Web app manifest (subset)", "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 24}, "short_name": {"type": "string", "maxLength": 12},
                       "start_url": {"type": "string", "format": "uri-reference"},
                       "display": {"enum": ["fullscreen", "standalone", "minimal-ui", "browser"]},
                       "theme_color": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"},
                       "icons": {"type": "array", "maxItems": 2, "items": {
                           "type": "object",
                           "properties": {"src": {"type": "string", "format": "uri-reference"},
                                          "sizes": {"type": "string", "pattern": "^[0-9]{2,3}x[0-9]{2,3}$"},
                                          "type": {"enum": ["image/png", "image/svg+xml"]}},
                           "required": ["src", "sizes"], "additionalProperties": False}}},
        "required": ["name", "start_url"], "additionalProperties": False}),
    ("store_babelrc", {
        "title": ".babelrc", "type": "object",
        "properties": {"presets": {"type": "array", "maxItems": 2, "items": {"anyOf": [
                           {"type": "string", "maxLength": 20},
                           {"type": "array", "prefixItems": [{"type": "string", "maxLength": 20},
                                                              {"type": "object", "additionalProperties": {"type": "boolean"}}],
                            "items": False, "minItems": 2}]}},
                       "plugins": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 2},
                       "sourceMaps": {"enum": [True, False, "inline", "both"]}},
        "additionalProperties": False}),
    ("store_editor_settings", {
        "title": "editor settings", "type": "object",
        "properties": {"editor.fontSize": {"type": "integer", "minimum": 6, "maximum": 100},
                       "editor.tabSize": {"type": "integer", "exclusiveMinimum": 0, "maximum": 16},
                       "files.autoSave": {"enum": ["off", "afterDelay", "onFocusChange", "onWindowChange"]},
                       "files.exclude": {"type": "object", "additionalProperties": {"type": "boolean"}}},
        "additionalProperties": False}),
    ("store_pyproject_tool", {
        "title": "pyproject [tool.ruff] (subset)", "type": "object",
        "properties": {"line-length": {"type": "integer", "minimum": 1, "maximum": 320},
                       "target-version": {"enum": ["py38", "py39", "py310", "py311", "py312"]},
                       "select": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]{1,3}[0-9]{0,4}$"}, "maxItems": 3},
                       "ignore": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]{1,3}[0-9]{0,4}$"}, "maxItems": 3}},
        "additionalProperties": False}),
    ("store_cloud_init_like", {
        "title": "cloud-config (subset)", "type": "object",
        "properties": {"hostname": {"type": "string", "format": "hostname"},
                       "users": {"type": "array", "maxItems": 2, "items": {
                           "type": "object",
                           "properties": {"name": {"type": "string", "pattern": "^[a-z_][a-z0-9_-]{0,15}$"},
                                          "sudo": {"type": ["string", "null"], "maxLength": 30},
                                          "groups": {"type": "array", "items": {"enum": ["sudo", "docker", "wheel"]}, "maxItems": 2}},
                           "required": ["name"], "additionalProperties": False}},
                       "packages": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9.+-]{1,20}$"}, "maxItems": 3},
                       "package_update": {"type": "boolean"}},
        "additionalProperties": False}),
    # GeoJSON-like (RFC 7946 shapes, trimmed)
    ("geojson_point", GEO_POINT),
    ("geojson_linestring", {"type": "object", "properties": {
        "type": {"const": "LineString"},
        "coordinates": {"type": "array", "items": GEO_POSITION, "minItems": 2, "maxItems": 3}},
        "required": ["type", "coordinates"], "additionalProperties": False}),
    ("geojson_polygon", {"type": "object", "properties": {
        "type": {"const": "Polygon"},
        "coordinates": {"type": "array", "maxItems": 1, "minItems": 1,
                        "items": {"type": "array", "items": GEO_POSITION, "minItems": 4, "maxItems": 4}}},
        "required": ["type", "coordinates"], "additionalProperties": False}),
    ("geojson_feature", {"type": "object", "properties": {
        "type": {"const": "Feature"}, "geometry": {"anyOf": [{"type": "null"}, GEO_POINT]},
        "properties": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "number"]}, "maxProperties": 2},
        "id": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "integer"}]}},
        "required": ["type", "geometry", "properties"], "additionalProperties": False}),
    ("geojson_feature_collection", {"$defs": {"point": GEO_POINT, "feature": {
        "type": "object", "properties": {"type": {"const": "Feature"}, "geometry": {"$ref": "#/$defs/point"},
                                         "properties": {"type": "null"}},
        "required": ["type", "geometry", "properties"], "additionalProperties": False}},
        "type": "object", "properties": {"type": {"const": "FeatureCollection"},
                                         "features": {"type": "array", "items": {"$ref": "#/$defs/feature"}, "maxItems": 2}},
        "required": ["type", "features"], "additionalProperties": False}),
    ("geojson_geometry_union", {"oneOf": [
        GEO_POINT,
        {"type": "object", "properties": {"type": {"const": "MultiPoint"},
                                          "coordinates": {"type": "array", "items": GEO_POSITION, "maxItems": 2}},
         "required": ["type", "coordinates"], "additionalProperties": False}]}),
    # OpenAPI-like components (draft-07 "definitions" and "#/components" style refs)
    ("openapi_petstore_pet", {"definitions": {
        "Category": {"type": "object", "properties": {"id": {"type": "integer", "format": "int64"},
                                                      "name": {"type": "string", "maxLength": 16}}, "additionalProperties": False},
        "Tag": {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string", "maxLength": 12}},
                "additionalProperties": False}},
        "type": "object", "properties": {
            "id": {"type": "integer", "format": "int64", "minimum": 1},
            "name": {"type": "string", "maxLength": 20},
            "category": {"$ref": "#/definitions/Category"},
            "photoUrls": {"type": "array", "items": {"type": "string", "format": "uri"}, "maxItems": 1},
            "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}, "maxItems": 2},
            "status": {"type": "string", "enum": ["available", "pending", "sold"]}},
        "required": ["name", "photoUrls"], "additionalProperties": False}),
    ("openapi_components_refs", {"components": {"schemas": {
        "Error": {"type": "object", "properties": {"code": {"type": "integer", "format": "int32"},
                                                   "message": {"type": "string", "maxLength": 40}},
                  "required": ["code", "message"], "additionalProperties": False},
        "NewPet": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                                    "tag": {"type": "string", "maxLength": 10}},
                   "required": ["name"], "additionalProperties": False}}},
        "type": "object", "properties": {"pet": {"$ref": "#/components/schemas/NewPet"},
                                         "error": {"anyOf": [{"$ref": "#/components/schemas/Error"}, {"type": "null"}]}},
        "required": ["pet", "error"], "additionalProperties": False}),
    ("openapi_problem_details", {
        "title": "RFC 7807 problem details", "type": "object",
        "properties": {"type": {"type": "string", "format": "uri-reference"},
                       "title": {"type": "string", "maxLength": 40},
                       "status": {"type": "integer", "minimum": 100, "exclusiveMaximum": 600},
                       "detail": {"type": "string", "maxLength": 60},
                       "instance": {"type": "string", "format": "uri-reference"}},
        "required": ["title", "status"], "additionalProperties": False}),
    ("openapi_allof_single", {"$defs": {"Base": {"type": "object", "properties": {
        "id": {"type": "string", "format": "uuid"}, "created": {"type": "string", "format": "date-time"}},
        "required": ["id", "created"]}},
        "allOf": [{"$ref": "#/$defs/Base"}]}),
    ("openapi_pagination_links", {"type": "object", "properties": {
        "self": {"type": "string", "format": "uri"}, "next": {"type": ["string", "null"], "format": "uri"},
        "count": {"type": "integer", "minimum": 0, "maximum": 1000}},
        "required": ["self", "next", "count"], "additionalProperties": False}),
    ("openapi_nullable_fields", {"type": "object", "properties": {
        "nickname": {"type": ["string", "null"], "maxLength": 12},
        "score": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "level": {"type": ["integer", "null"], "minimum": 1, "maximum": 9}},
        "required": ["nickname", "score", "level"], "additionalProperties": False}),
    # protocols
    ("jsonrpc_request", {"type": "object", "properties": {
        "jsonrpc": {"const": "2.0"}, "method": {"type": "string", "pattern": "^[a-z]+(\\.[a-z]+)?$"},
        "params": {"anyOf": [{"type": "array", "maxItems": 3, "items": {"type": ["string", "number", "boolean", "null"]}},
                             {"type": "object", "maxProperties": 3, "additionalProperties": {"type": ["string", "integer"]}}]},
        "id": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 8}]}},
        "required": ["jsonrpc", "method", "id"], "additionalProperties": False}),
    ("jsonrpc_response", {"type": "object", "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": "integer", "minimum": 0},
        "result": {"type": ["string", "integer", "boolean"], "maxLength": 20},
        "error": {"type": "object", "properties": {"code": {"type": "integer", "minimum": -32768, "maximum": -32000},
                                                  "message": {"type": "string", "maxLength": 30}},
                  "required": ["code", "message"], "additionalProperties": False}},
        "required": ["jsonrpc", "id"], "additionalProperties": False}),
    ("cloudevents", {"title": "CloudEvents 1.0 (subset)", "type": "object", "properties": {
        "specversion": {"const": "1.0"}, "id": {"type": "string", "format": "uuid"},
        "source": {"type": "string", "format": "uri-reference"},
        "type": {"type": "string", "pattern": "^com\\.example\\.[a-z]{1,10}$"},
        "time": {"type": "string", "format": "date-time"},
        "datacontenttype": {"enum": ["application/json", "text/plain"]},
        "data": {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 2}},
        "required": ["specversion", "id", "source", "type"], "additionalProperties": False}),
    ("json_feed_item", {"title": "JSON Feed item", "type": "object", "properties": {
        "id": {"type": "string", "maxLength": 12}, "url": {"type": "string", "format": "uri"},
        "title": {"type": "string", "maxLength": 40}, "content_text": {"type": "string", "maxLength": 60},
        "date_published": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}},
        "required": ["id"], "additionalProperties": False}),
    ("oauth_token_response", {"type": "object", "properties": {
        "access_token": {"type": "string", "pattern": "^[A-Za-z0-9_-]{16,32}$"},
        "token_type": {"enum": ["Bearer", "bearer"]}, "expires_in": {"type": "integer", "minimum": 1, "maximum": 86400},
        "refresh_token": {"type": "string", "pattern": "^[A-Za-z0-9_-]{16,32}$"},
        "scope": {"type": "string", "pattern": "^[a-z:]{1,12}( [a-z:]{1,12}){0,2}$"}},
        "required": ["access_token", "token_type", "expires_in"], "additionalProperties": False}),
    ("jwt_claims", {"type": "object", "properties": {
        "iss": {"type": "string", "format": "uri"}, "sub": {"type": "string", "maxLength": 20},
        "aud": {"anyOf": [{"type": "string", "maxLength": 16}, {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 2}]},
        "exp": {"type": "integer", "minimum": 1600000000, "maximum": 2000000000},
        "iat": {"type": "integer", "minimum": 1600000000, "maximum": 2000000000}},
        "required": ["iss", "sub", "exp"], "additionalProperties": False}),
    ("k8s_pod_metadata", {"title": "Kubernetes ObjectMeta (subset)", "type": "object", "properties": {
        "apiVersion": {"const": "v1"}, "kind": {"const": "Pod"},
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$"},
            "namespace": {"type": "string", "pattern": "^[a-z0-9-]{1,16}$"},
            "labels": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string", "pattern": "^[a-z0-9-]{0,16}$"}}},
            "required": ["name"], "additionalProperties": False},
        "spec": {"type": "object", "properties": {"containers": {"type": "array", "minItems": 1, "maxItems": 1, "items": {
            "type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z-]{1,12}$"},
                                             "image": {"type": "string", "pattern": "^[a-z]{1,10}:[0-9.]{1,6}$"},
                                             "ports": {"type": "array", "maxItems": 1, "items": {
                                                 "type": "object", "properties": {"containerPort": {"type": "integer", "minimum": 1, "maximum": 65535}},
                                                 "required": ["containerPort"], "additionalProperties": False}}},
            "required": ["name", "image"], "additionalProperties": False}}},
            "required": ["containers"], "additionalProperties": False}},
        "required": ["apiVersion", "kind", "metadata", "spec"], "additionalProperties": False}),
    # recursion and references
    ("recursive_root_ref", {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 8}, "children": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}},
        "required": ["name", "children"], "additionalProperties": False}),
    ("recursive_json_value", {"$defs": {"value": {"anyOf": [
        {"type": "null"}, {"type": "boolean"}, {"type": "integer", "minimum": -99, "maximum": 99},
        {"type": "string", "maxLength": 8},
        {"type": "array", "items": {"$ref": "#/$defs/value"}, "maxItems": 2},
        {"type": "object", "additionalProperties": {"$ref": "#/$defs/value"}, "maxProperties": 2}]}},
        "$ref": "#/$defs/value"}),
    ("recursive_mutual", {"$defs": {
        "a": {"type": "object", "properties": {"b": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]}}, "required": ["b"],
              "additionalProperties": False},
        "b": {"type": "object", "properties": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]},
                                              "n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["a", "n"], "additionalProperties": False}},
        "$ref": "#/$defs/a"}),
    ("ref_with_escaped_pointer", {"$defs": {"a/b": {"type": "integer", "minimum": 0, "maximum": 5},
                                            "c~d": {"type": "string", "maxLength": 5}},
                                  "type": "object", "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"}},
                                  "required": ["x", "y"], "additionalProperties": False}),
    # top-level shapes and edge keywords
    ("top_array_of_ints", {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100},
                           "minItems": 1, "maxItems": 5}),
    ("top_enum_mixed", {"enum": ["red", 1, 2.5, True, None, "blue"]}),
    ("top_const_object", {"const": {"ok": True, "n": 1}}),
    ("top_string_date", {"type": "string", "format": "date"}),
    ("top_number_exclusive", {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}),
    ("top_integer_negative_range", {"type": "integer", "minimum": -1000, "maximum": -10}),
    ("top_integer_multiple_of", {"type": "integer", "multipleOf": 7}),
    ("integer_multiple_of_fields", {"type": "object", "properties": {
        "price_cents": {"type": "integer", "multipleOf": 1000},
        "step": {"type": "integer", "multipleOf": 3},
        "offset": {"type": ["integer", "null"], "multipleOf": 4}},
        "required": ["price_cents", "step"], "additionalProperties": False}),
    ("integer_multiple_of_beside_range", {"type": "object", "properties": {
        "page_size": {"type": "integer", "multipleOf": 10},
        "page": {"type": "integer", "minimum": 1, "maximum": 50}},
        "required": ["page_size", "page"], "additionalProperties": False}),
    ("top_boolean", {"type": "boolean"}),
    ("top_null_or_string", {"type": ["null", "string"], "maxLength": 10}),
    ("top_empty_schema", {}),
    ("tuple_prefix_items_closed", {"type": "array", "prefixItems": [
        {"type": "string", "maxLength": 6}, {"type": "integer"}, {"type": "boolean"}], "items": False}),
    ("tuple_prefix_items_open", {"type": "array", "prefixItems": [{"const": "head"}],
                                 "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 4}),
    ("pattern_optional_suffix", {"title": "image reference", "type": "object", "properties": {
        "image": {"type": "string", "pattern": "^[a-z]{1,8}(:[0-9]{1,3})?$"},
        "digest": {"type": "string", "pattern": "^sha256(:[0-9a-f]{4,8})?$"}},
        "required": ["image", "digest"], "additionalProperties": False}),
    ("pattern_properties", {"type": "object", "patternProperties": {
        "^x-[a-z]{1,8}$": {"type": "string", "maxLength": 10}, "^n_[0-9]{1,3}$": {"type": "integer"}},
        "additionalProperties": False, "maxProperties": 3}),
    ("additional_properties_schema", {"type": "object", "properties": {"id": {"type": "integer"}},
                                      "required": ["id"],
                                      "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}}),
    ("min_max_properties", {"type": "object", "additionalProperties": {"type": "integer"},
                            "minProperties": 1, "maxProperties": 2}),
    ("unevaluated_properties_false", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 4}},
                                      "required": ["a"], "unevaluatedProperties": False}),
    ("property_names_pattern", {"type": "object", "propertyNames": {"pattern": "^[a-z]{1,6}$"},
                                "additionalProperties": {"type": "boolean"}, "maxProperties": 3}),
    ("oneof_overlapping_numbers", {"type": "object", "properties": {
        "amount": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0.5}]}},
        "required": ["amount"], "additionalProperties": False}),
    ("anyof_nested", {"anyOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "v": {"type": "integer"}}, "required": ["kind", "v"],
         "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "b"}, "v": {"anyOf": [{"type": "string", "maxLength": 4},
                                                                                   {"type": "null"}]}},
         "required": ["kind", "v"], "additionalProperties": False}]}),
    ("string_formats_all", {"type": "object", "properties": {
        "email": {"type": "string", "format": "email"}, "date": {"type": "string", "format": "date"},
        "time": {"type": "string", "format": "time"}, "date_time": {"type": "string", "format": "date-time"},
        "duration": {"type": "string", "format": "duration"}, "ipv4": {"type": "string", "format": "ipv4"},
        "ipv6": {"type": "string", "format": "ipv6"}, "hostname": {"type": "string", "format": "hostname"},
        "uuid": {"type": "string", "format": "uuid"}},
        "required": ["email", "date", "time", "date_time", "duration", "ipv4", "ipv6", "hostname", "uuid"],
        "additionalProperties": False}),
    ("string_formats_uris", {"type": "object", "properties": {
        "uri": {"type": "string", "format": "uri"}, "uri_reference": {"type": "string", "format": "uri-reference"},
        "uri_template": {"type": "string", "format": "uri-template"},
        "json_pointer": {"type": "string", "format": "json-pointer"},
        "relative_json_pointer": {"type": "string", "format": "relative-json-pointer"}},
        "required": ["uri", "uri_reference", "uri_template", "json_pointer", "relative_json_pointer"],
        "additionalProperties": False}),
    ("string_format_annotation_only", {"type": "object", "properties": {
        "color": {"type": "string", "format": "color", "maxLength": 7},
        "password": {"type": "string", "format": "password", "minLength": 8, "maxLength": 12}},
        "required": ["color", "password"], "additionalProperties": False}),
    ("string_escapes_and_unicode", {"type": "object", "properties": {
        "quote": {"type": "string", "maxLength": 6}, "path": {"type": "string", "pattern": "^[A-Z]:\\\\[a-z]{1,6}$"},
        "emoji": {"enum": ["✓", "✗", "“quoted”", "tab\there", "new\nline"]}},
        "required": ["quote", "path", "emoji"], "additionalProperties": False}),
    ("numbers_float_bounds", {"type": "object", "properties": {
        "p": {"type": "number", "minimum": 0.25, "maximum": 0.75},
        "q": {"type": "number", "exclusiveMinimum": -1.5, "exclusiveMaximum": 1.5},
        "r": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}},
        "required": ["p", "q", "r"], "additionalProperties": False}),
    ("arrays_nested_bounds", {"type": "array", "minItems": 1, "maxItems": 2, "items": {
        "type": "array", "minItems": 2, "maxItems": 3, "items": {"enum": ["x", "o", " "]}}}),
    ("required_all_declared", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
                               "required": ["a", "b"], "additionalProperties": {"type": "boolean"}}),
    ("description_heavy", {"title": "Described", "description": "Every field documented, as generated by tools.",
                           "type": "object", "properties": {
                               "id": {"description": "Identifier", "type": "integer", "examples": [1, 2], "default": 1,
                                      "minimum": 1, "maximum": 1000},
                               "label": {"description": "Label", "type": "string", "maxLength": 10, "deprecated": True,
                                         "readOnly": True}},
                           "required": ["id", "label"], "additionalProperties": False, "$comment": "comment"}),
]

# ---------------------------------------------------------------------------------------------
# Schemas the engine must refuse, with the keyword its message names
# ---------------------------------------------------------------------------------------------


class TagSet(BaseModel):
    tags: set[str]


class FrozenCodes(BaseModel):
    codes: frozenset[conint(ge=0, le=9)]


class HalfSteps(BaseModel):
    value: Annotated[float, Field(multiple_of=0.5)]


class Site(BaseModel):
    homepage: AnyUrl


class Crawl(BaseModel):
    pages: conlist(HttpUrl, max_length=2)


class SkuWithLength(BaseModel):
    sku: constr(pattern=r"^[A-Z]{3}[0-9]+$", max_length=8)


REFUSED: list[tuple[str, Any, str]] = [
    ("refused_not", {"type": "object", "properties": {"a": {"type": "integer", "not": {"const": 0}}}}, "not"),
    ("refused_not_top", {"not": {"type": "null"}}, "not"),
    ("refused_if_then_else", {"type": "object", "properties": {"country": {"enum": ["US", "FR"]}, "zip": {"type": "string"}},
                              "if": {"properties": {"country": {"const": "US"}}},
                              "then": {"properties": {"zip": {"pattern": "^[0-9]{5}$"}}},
                              "else": {"properties": {"zip": {"pattern": "^[0-9]{4,5}$"}}}}, "if"),
    ("refused_then_alone", {"type": "object", "then": {"required": ["a"]}}, "then"),
    ("refused_else_alone", {"type": "object", "else": {"required": ["a"]}}, "else"),
    ("refused_dependent_required", {"type": "object", "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
                                    "dependentRequired": {"card": ["billing"]}}, "dependentRequired"),
    ("refused_dependent_schemas", {"type": "object", "properties": {"card": {"type": "string"}},
                                   "dependentSchemas": {"card": {"required": ["billing"]}}}, "dependentSchemas"),
    ("refused_contains", {"type": "array", "items": {"type": "integer"}, "contains": {"const": 7}}, "contains"),
    ("refused_min_contains", {"type": "array", "items": {"type": "integer"}, "minContains": 2}, "minContains"),
    ("refused_max_contains", {"type": "object", "properties": {"a": {"type": "array", "maxContains": 1}}}, "maxContains"),
    ("refused_unique_items", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "uniqueItems"),
    ("refused_pydantic_set", TagSet, "uniqueItems"),
    ("refused_pydantic_frozenset", FrozenCodes, "uniqueItems"),
    ("refused_multiple_of_number", {"type": "number", "multipleOf": 0.01}, "multipleOf"),
    ("refused_multiple_of_untyped", {"type": "object", "properties": {"n": {"multipleOf": 3}}}, "multipleOf"),
    ("refused_pydantic_float_multiple_of", HalfSteps, "multipleOf"),
    ("refused_pydantic_int_multiple_of_range", BankTransaction, "multipleOf"),
    ("refused_integer_multiple_of_range", {"type": "integer", "multipleOf": 7, "minimum": 0, "maximum": 100}, "multipleOf"),
    ("refused_integer_multiple_of_wide_range", {"type": "object", "properties": {
        "price_cents": {"type": "integer", "multipleOf": 1000, "minimum": 1000, "maximum": 1000000},
        "step": {"type": "integer", "multipleOf": 3}},
        "required": ["price_cents", "step"], "additionalProperties": False}, "multipleOf"),
    ("refused_integer_multiple_of_exclusive", {"type": "object", "properties": {
        "n": {"type": ["integer", "null"], "multipleOf": 2, "exclusiveMinimum": 0}}}, "multipleOf"),
    ("refused_required_undeclared", {"type": "object", "properties": {"a": {"type": "integer"}},
                                     "required": ["a", "b"], "additionalProperties": {"type": "boolean"}}, "required"),
    ("refused_required_no_properties", {"type": "object", "required": ["id"]}, "required"),
    ("refused_required_nested_def", {"$defs": {"item": {"type": "object", "properties": {"sku": {"type": "string"}},
                                                        "required": ["sku", "qty"]}},
                                     "type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 3}, "required"),
    ("refused_all_of_two", {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
                                      {"type": "object", "properties": {"b": {"type": "integer"}}}]}, "allOf"),
    ("refused_all_of_nested", {"$defs": {"x": {"allOf": [{"type": "integer"}, {"minimum": 0}]}},
                               "type": "object", "properties": {"v": {"$ref": "#/$defs/x"}}}, "allOf"),
    ("refused_ref_url", {"type": "object", "properties": {"geo": {"$ref": "https://geojson.org/schema/Point.json"}}}, "$ref"),
    ("refused_ref_relative_file", {"type": "array", "items": {"$ref": "definitions.json#/Address"}}, "$ref"),
    ("refused_length_with_pattern", {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5}, "minLength/maxLength"),
    ("refused_pydantic_constr_pattern_length", SkuWithLength, "minLength/maxLength"),
    ("refused_length_with_format_email", {"type": "object", "properties": {
        "email": {"type": "string", "format": "email", "maxLength": 64}}}, "minLength/maxLength"),
    ("refused_pydantic_any_url", Site, "minLength/maxLength"),
    ("refused_pydantic_http_url", Crawl, "minLength/maxLength"),
    ("refused_length_with_format_date", {"type": "string", "format": "date", "minLength": 10}, "minLength/maxLength"),
]
